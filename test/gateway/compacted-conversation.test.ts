// An agent that compacts its context, 1,500 turns long, through the gateway in front of a real reference engine
// and the run's real Temporal server: every request carries only the system prompt and its last few messages,
// so no two requests share an earlier prefix, and each turn must still pair with the one whose reply it kept.
// The gateway's work per request stays the same from the first turn to the last (a constant number of store
// operations: no probing). Latency is printed, not asserted: the last 100 turns against the first 100 turns of
// a fresh conversation sent in between them (a baseline measured under the same load), and against the long
// conversation's own first 100.

import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../core/chat-messages.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import type { TurnRef } from '../../core/types.js';
import { CountingStore } from '../support/counting-store.js';
import {
  type EngineStack,
  sessionSignals,
  startEngineStack,
  startTestGateway,
  type TestGateway,
} from './gateway-fixture.js';

const TURNS = 1_500;
/** Messages kept besides the system prompt: the last two exchanges and the new user message. */
const WINDOW = 5;
/** Turns at each end compared. */
const BASELINE = 100;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

describe('a compacted conversation of 1,500 turns', () => {
  let stack: EngineStack;
  let env: TestWorkflowEnvironment;
  let store: CountingStore;
  let gateway: TestGateway;
  let sessionId: string;
  let baselineId: string;

  beforeAll(async () => {
    stack = await startEngineStack('compacted');
    env = stack.env;
    store = new CountingStore(join(stack.dir, 'store'));
    gateway = await startTestGateway({ engineUrl: stack.engine.url, client: env.client, store });
    sessionId = stack.session('compacted');
    baselineId = stack.session('compacted-baseline');
  }, 180_000);

  afterAll(async () => {
    await gateway?.close();
    await stack?.close();
  });

  it('pairs every turn with the one before it, with the same work per request throughout', async () => {
    const conversation = (id: string) => {
      const system: ChatMessage = {
        role: 'system',
        content: 'You are an agent; older messages were compacted.',
      };
      const history: ChatMessage[] = [];
      const operations: number[] = [];
      const latencies: number[] = [];
      return {
        operations,
        latencies,
        async turn(n: number) {
          history.push({ role: 'user', content: `step ${n}: carry on` });
          const before = store.operations;
          const started = performance.now();
          const response = await fetch(`${gateway.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'X-Session-Id': id },
            body: JSON.stringify({
              model: 'tiny',
              messages: [system, ...history.slice(-WINDOW)],
              max_tokens: 1,
            }),
          });
          const body = (await response.json()) as { choices?: { message: { content: string | null } }[] };
          latencies.push(performance.now() - started);
          expect(response.status, `${id} turn ${n}: ${JSON.stringify(body)}`).toBe(200);
          operations.push(store.operations - before);
          history.push({ role: 'assistant', content: body.choices?.[0]?.message.content ?? '' });
        },
      };
    };
    const long = conversation(sessionId);
    const fresh = conversation(baselineId);
    for (let turn = 1; turn <= TURNS; turn++) {
      await long.turn(turn);
      // The baseline: a new conversation's first turns, interleaved with the long one's last turns.
      if (turn > TURNS - BASELINE) await fresh.turn(turn - (TURNS - BASELINE));
    }

    // Answered once durable; the relay delivers the turns to the session workflows right after.
    await gateway.delivered(120_000);
    for (const [id, count] of [
      [sessionId, TURNS],
      [baselineId, BASELINE],
    ] as const) {
      const refs = (await sessionSignals(env.client, scopedSessionId(LOCAL_TENANT, id)))
        .filter((signal) => signal.name === 'turnRecorded')
        .map((signal) => signal.args[0] as TurnRef);
      expect(refs).toHaveLength(count);
      expect(new Set(refs.map((ref) => ref.sampleId)).size).toBe(count);
      expect(refs[0]?.continues).toBeNull();
      const misses = refs.flatMap((ref, i) =>
        i > 0 && ref.continues?.sampleId !== refs[i - 1]?.sampleId ? [i + 1] : [],
      );
      expect(misses, `${id}: turns not paired with the turn before them`).toEqual([]);
    }

    // The same store work for the 10th turn and the 1,500th: two reads, one create-if-absent, two index writes.
    expect(new Set(long.operations.slice(10))).toEqual(new Set([5]));

    const early = long.latencies.slice(0, BASELINE);
    const late = long.latencies.slice(-BASELINE);
    const figure = (values: number[]) =>
      `p50 ${percentile(values, 50).toFixed(1)} ms, p99 ${percentile(values, 99).toFixed(1)} ms`;
    const ratio = (a: number[], b: number[]) => (percentile(a, 50) / percentile(b, 50)).toFixed(2);
    console.log(
      `[compacted ${TURNS} turns] turns 1-${BASELINE}: ${figure(early)}; ` +
        `turns ${TURNS - BASELINE + 1}-${TURNS}: ${figure(late)}; ` +
        `a fresh conversation's turns 1-${BASELINE}, sent between those: ${figure(fresh.latencies)}; ` +
        `p50 late/fresh ${ratio(late, fresh.latencies)}, late/early ${ratio(late, early)}`,
    );
    // About 1,600 requests: about 4 minutes on a 2-core machine at load 7 (each is one engine step of the tiny
    // model); the limit leaves room for a machine shared with heavier work, where every request is slower.
  }, 1_800_000);
});
