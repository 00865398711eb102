// Serving through a Temporal outage, and the drain afterwards, for both stores.
//
//   npx tsx bench/outbox-drain.ts [--outageS 60] [--baselineS 10] [--clients 8] [--sessionTurns 10]
//   npm run bench:outage
//
// Starts the benchmark stack with both gateways (filesystem store, fsync'd; PostgreSQL). For each store in
// turn: `clients` clients talk (non-streaming main turns, `max_tokens` 8, a session of `sessionTurns` turns
// after another) for `baselineS` seconds with Temporal up, then the Temporal dev server is killed (SIGKILL) and
// they go on for `outageS` seconds, then it is started again on the same database. Prints the turn latency
// before and during the outage (every turn should be answered as usual: serving never waits on Temporal), the
// outbox depth the outage left, the time from the restart to an empty outbox, and the delivery lag of what was
// drained. Figures only; never passes or fails.

import { packingConversation, timedChat } from './support/chat-client.js';
import { reportLoad } from './support/machine-load.js';
import { type BenchGateway, type Stack, startStack, stopOnSignal } from './support/stack.js';
import { intOptions, median, ms, p99, printTable } from './support/stats.js';

const options = intOptions(
  { outageS: 60, baselineS: 10, clients: 8, sessionTurns: 10, maxTokens: 8 },
  'npx tsx bench/outbox-drain.ts [options]',
);

let stack = null as Stack | null;
stopOnSignal(() => stack);

interface Window {
  latencies: number[];
  failures: number;
  wallMs: number;
}

/** `clients` clients talking through `lane` until `until` (performance.now()). */
async function talk(lane: BenchGateway, label: string, until: number): Promise<Window> {
  const latencies: number[] = [];
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: options.clients }, async (_, client) => {
      for (let i = 0; performance.now() < until; i++) {
        const session = `drain-${process.pid}-${label}-c${client}-s${Math.floor(i / options.sessionTurns)}`;
        try {
          const timing = await timedChat(
            `${lane.gateway.url}/v1/chat/completions`,
            {
              model: 'tiny',
              messages: packingConversation((i % options.sessionTurns) + 1),
              max_tokens: options.maxTokens,
              temperature: 1,
              seed: i,
            },
            { 'x-session-id': session },
          );
          latencies.push(timing.totalMs);
        } catch {
          failures++;
        }
      }
    }),
  );
  return { latencies, failures, wallMs: performance.now() - started };
}

async function outage(name: 'file' | 'postgres'): Promise<string[]> {
  const lane = stack?.[name];
  if (!stack || !lane) throw new Error('stack not started');
  await stack.settle(300, 60_000);
  lane.lagMs.length = 0;
  const before = await talk(lane, `${name}-before`, performance.now() + options.baselineS * 1000);
  await stack.settle(300, 60_000);
  lane.lagMs.length = 0;

  await stack.killTemporal();
  const during = await talk(lane, `${name}-outage`, performance.now() + options.outageS * 1000);
  const left = await lane.store.outbox.stats();
  const restarted = performance.now();
  await stack.startTemporal();
  const up = performance.now();
  for (;;) {
    if ((await lane.store.outbox.stats()).depth === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const drained = performance.now();
  const lag = lane.lagMs.splice(0);
  const rate = (w: Window) => (w.latencies.length / (w.wallMs / 1000)).toFixed(1);
  console.log(
    `${name}: outage ${options.outageS} s left ${left.depth} outbox entries (oldest ` +
      `${left.oldestCreatedAt === null ? '-' : ms(Date.now() - left.oldestCreatedAt)} old at the restart)`,
  );
  return [
    name,
    `${ms(median(before.latencies))} / ${ms(p99(before.latencies))} (${rate(before)}/s)`,
    `${ms(median(during.latencies))} / ${ms(p99(during.latencies))} (${rate(during)}/s)`,
    `${before.failures} / ${during.failures}`,
    String(left.depth),
    ms(up - restarted),
    ms(drained - restarted),
    `${ms(median(lag))} / ${ms(p99(lag))}`,
  ];
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(
    'starting: temporal dev server, reference engine, fake judge, PostgreSQL, a control worker and gateway per store',
  );
  stack = await startStack({
    gateway: true,
    judge: true,
    postgres: true,
    // Sessions pair and score their turns (fake judge, one vote); no training step (batch size 4096).
    config: {
      runId: 'bench-drain',
      method: 'rl',
      judge: { votes: 1 },
      training: { batchSize: 4096 },
      session: { idleTimeoutMs: 3_600_000 },
    },
  });
  console.log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(
    `parameters: ${options.clients} clients, non-streaming main turns, max_tokens ${options.maxTokens}, ` +
      `${options.sessionTurns} turns per session; ${options.baselineS} s with Temporal up, then ` +
      `${options.outageS} s with it killed, then restarted on the same database`,
  );
  const rows = [await outage('file'), await outage('postgres')];
  console.log('');
  printTable(
    [
      'store',
      'turns before p50 / p99 (rate)',
      'turns during the outage p50 / p99 (rate)',
      'failed before / during',
      'outbox after the outage',
      'Temporal restart',
      'restart -> outbox empty',
      'delivery lag p50 / p99',
    ],
    rows,
  );
  console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

const loadAtEnd = reportLoad('outage bench');
try {
  await main();
} finally {
  await stack?.close();
}
loadAtEnd();
