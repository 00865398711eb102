// Small helpers every TypeScript benchmark shares: percentiles (nearest rank, as bench/engine_bench.py),
// command-line numbers, and aligned tables. Figures only; nothing here passes or fails on time.

import { parseArgs } from 'node:util';

/** Nearest-rank percentile of `values` (q in 0..1), NaN for an empty list. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const ordered = [...values].sort((a, b) => a - b);
  const index = Math.min(ordered.length - 1, Math.max(0, Math.round(q * (ordered.length - 1))));
  return ordered[index] as number;
}

export const median = (values: readonly number[]): number => percentile(values, 0.5);

/**
 * The median of a few values, the two middle ones averaged for an even count: over six rounds the nearest rank
 * takes the fourth, which leans up.
 */
export function middleValue(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const ordered = [...values].sort((a, b) => a - b);
  const half = ordered.length / 2;
  return Number.isInteger(half)
    ? ((ordered[half - 1] as number) + (ordered[half] as number)) / 2
    : (ordered[Math.floor(half)] as number);
}
export const p99 = (values: readonly number[]): number => percentile(values, 0.99);

/** Milliseconds with a precision that suits their size. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 100) return `${value.toFixed(0)} ms`;
  if (Math.abs(value) >= 10) return `${value.toFixed(1)} ms`;
  return `${value.toFixed(2)} ms`;
}

export function ratio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}x` : 'n/a';
}

export function signedMs(value: number): string {
  return `${value >= 0 ? '+' : ''}${ms(value)}`;
}

/** Prints rows as a Markdown table, so a run's output can be pasted into docs/benchmarks.md as it is. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
}

/** `--name value` integer options with defaults; `--help` prints them. */
/** Takes `--name value` out of the command line (before `intOptions` reads the numeric ones). */
export function stringOption(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = process.argv[at + 1];
  if (value === undefined) throw new Error(`--${name} needs a value`);
  process.argv.splice(at, 2);
  return value;
}

export function intOptions<T extends Record<string, number>>(defaults: T, usage: string): T {
  const { values } = parseArgs({
    options: {
      ...Object.fromEntries(Object.keys(defaults).map((key) => [key, { type: 'string' as const }])),
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(usage);
    for (const [key, value] of Object.entries(defaults)) console.log(`  --${key} ${value}`);
    process.exit(0);
  }
  const result: Record<string, number> = { ...defaults };
  for (const key of Object.keys(defaults)) {
    const raw = (values as Record<string, unknown>)[key];
    if (typeof raw !== 'string') continue;
    const value = Number(raw);
    if (!Number.isFinite(value)) throw new Error(`--${key} must be a number, got "${raw}"`);
    result[key] = value;
  }
  return result as T;
}

/** Runs `count` tasks with at most `concurrency` in flight; resolves when all are done. */
export async function runConcurrently(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const index = next++;
      await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
}

export const now = (): number => performance.now();

/** A small seeded PRNG (mulberry32), so a benchmark's request order is the same on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A shuffled copy (Fisher-Yates). */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
