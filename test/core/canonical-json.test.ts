// A turn's identity and an Idempotency-Key's fingerprint are hashes of canonical JSON that stores and clients
// keep: a conversation recorded before a change to canonicalJson must hash the same after it, or its next turn
// no longer pairs with it. The form it was first written in is kept here as the reference.

import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../core/canonical-json.js';

/** canonicalJson as first written (entries filtered, sorted and mapped): what every stored hash was made with. */
function firstForm(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => firstForm(item ?? null)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${firstForm(member)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A small seeded generator, so a failure names a value that can be made again. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const KEYS = [
  'role',
  'content',
  'tool_calls',
  'b',
  'a',
  'Z',
  '_',
  '10',
  '2',
  '',
  'é',
  '\u{1F600}',
  'q"',
  '\n',
];
const LEAVES = [
  null,
  true,
  false,
  0,
  -0,
  1.5,
  1e21,
  Number.NaN,
  Infinity,
  'x',
  'héllo\u2028"\\',
  undefined,
  42,
];

function randomValue(next: () => number, depth: number): unknown {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const roll = next();
  if (depth > 3 || roll < 0.3) return pick(LEAVES);
  if (roll < 0.6) return Array.from({ length: Math.floor(next() * 5) }, () => randomValue(next, depth + 1));
  const object: Record<string, unknown> = {};
  for (let i = Math.floor(next() * 6); i > 0; i--) object[pick(KEYS)] = randomValue(next, depth + 1);
  return object;
}

describe('canonicalJson', () => {
  it('writes exactly what its first form wrote, for 20,000 values of every JSON shape', () => {
    const next = generator(20261206);
    for (let i = 0; i < 20_000; i++) {
      const value = randomValue(next, 0);
      expect(canonicalJson(value), JSON.stringify(value)).toBe(firstForm(value));
    }
  });

  it('sorts keys by UTF-16 code units at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: [{ z: 1, y: undefined, é: 2, Z: 3 }], a: undefined, '': null })).toBe(
      '{"":null,"b":[{"Z":3,"z":1,"é":2}]}',
    );
    expect(canonicalJson([undefined, () => 1, Number.NaN])).toBe('[null,null,null]');
    expect(canonicalJson(undefined)).toBe('null');
  });
});
