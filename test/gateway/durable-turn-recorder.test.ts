// Turn numbering without memory: two recorders (two gateways) on one store agree on numbers, a retried
// request is recognised, and every recorded turn reaches its session workflow on the real Temporal server
// through the outbox relay. A crash between the record and its outbox entry loses nothing acknowledged.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSampleStore } from '../../activities/sample-store.js';
import type { ChatMessage } from '../../core/chat-messages.js';
import { type TurnRecord, turnRecordKey } from '../../core/turn-record.js';
import { DurableTurnRecorder } from '../../gateway/durable-turn-recorder.js';
import { sessionDelivery } from '../../gateway/outbox-delivery.js';
import { OutboxRelay } from '../../gateway/outbox-relay.js';
import type { TurnDraft } from '../../gateway/turn-recorder.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import {
  outboxEmpty,
  sessionSignals,
  TEST_SESSION_SETTINGS,
  terminateSessions,
  uniqueSessionId,
} from './gateway-fixture.js';

describe('DurableTurnRecorder', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let store: FileSampleStore;
  let relay: OutboxRelay;
  const sessions: string[] = [];
  const taskQueue = uniqueTaskQueue('recorder');

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'openclaw-recorder-'));
    store = new FileSampleStore(join(dir, 'store'));
    relay = new OutboxRelay({ outbox: store.outbox, deliver: sessionDelivery(env.client), pollMs: 50 });
    relay.start();
  });

  afterAll(async () => {
    await relay?.stop();
    if (env) await terminateSessions(env, sessions);
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const recorder = (on = store) =>
    new DurableTurnRecorder({
      store: on,
      session: TEST_SESSION_SETTINGS,
      taskQueue,
      retry: { attempts: 2, initialDelayMs: 10, maxDelayMs: 20 },
      onQueued: () => relay.notify(),
    });

  const draft = (sessionId: string, messages: ChatMessage[]): TurnDraft => ({
    sessionId,
    model: 'm',
    messages,
    tools: null,
    response: { content: 'ok', reasoningContent: null, toolCalls: null },
    promptIds: [1, 2],
    responseIds: [3],
    responseLogProbs: [-0.5],
    policyVersion: 2,
    finishReason: 'stop',
  });

  it('gives concurrent different requests different numbers and identical ones the same', async () => {
    const sessionId = uniqueSessionId('rec');
    sessions.push(sessionId);
    const [a, b] = [recorder(), recorder()];
    const history: ChatMessage[] = [
      { role: 'user', content: 'q1' },
      { role: 'assistant', content: 'a1' },
    ];
    const left = draft(sessionId, [...history, { role: 'user', content: 'left' }]);
    const right = draft(sessionId, [...history, { role: 'user', content: 'right' }]);
    const results = await Promise.all([a.record(left), b.record(right), a.record(left), b.record(left)]);

    const [leftFirst, rightOnly, ...leftRetries] = results;
    const lefts = [leftFirst, ...leftRetries];
    // The three copies of `left` share one turn, recorded once; `right` got the other number.
    expect(new Set(lefts.map((r) => r?.turn)).size).toBe(1);
    expect(lefts.filter((r) => r?.duplicate === false)).toHaveLength(1);
    expect(rightOnly?.duplicate).toBe(false);
    expect([leftFirst?.turn, rightOnly?.turn].sort()).toEqual([2, 3]);

    expect(await store.list(`turns/${sessionId}`)).toEqual([
      turnRecordKey(sessionId, 2),
      turnRecordKey(sessionId, 3),
    ]);
    const stored = await store.get<TurnRecord>(turnRecordKey(sessionId, rightOnly?.turn ?? 0));
    expect(stored?.messages.at(-1)?.content).toBe('right');

    // Answered once durable; delivered by the relay right after.
    await outboxEmpty(store, 20_000);
    const signals = await sessionSignals(env.client, sessionId);
    expect(signals).toHaveLength(4);
    expect(signals.every((s) => s.name === 'turnRecorded')).toBe(true);
    expect(new Set(signals.map((s) => (s.args[0] as { turn: number }).turn))).toEqual(new Set([2, 3]));

    await a.endSession(sessionId);
    await outboxEmpty(store, 20_000);
    expect((await sessionSignals(env.client, sessionId)).at(-1)?.name).toBe('sessionDone');
  });

  it('a crash between the record and its outbox entry: unacknowledged, and the retry delivers it', async () => {
    const sessionId = session();
    // The outbox folder cannot take a file: the record is written, its entry is not, as if the process had
    // died between the two writes.
    const root = join(dir, 'torn');
    await mkdir(join(root, '.outbox'), { recursive: true });
    await writeFile(join(root, '.outbox', 'entries'), 'not a folder');
    const torn = new FileSampleStore(root);
    const turn = draft(sessionId, [{ role: 'user', content: 'hello' }]);
    await expect(recorder(torn).record(turn)).rejects.toThrow();
    expect(await torn.get(turnRecordKey(sessionId, 1))).toBeDefined();
    await rm(join(root, '.outbox', 'entries'));

    // The client saw an error and retries the same request: the recorder finds the record and queues it now.
    const retried = await recorder(torn).record(turn);
    expect(retried).toEqual({ turn: 1, sampleId: `${sessionId}:1`, duplicate: true });
    const tornRelay = new OutboxRelay({
      outbox: torn.outbox,
      deliver: sessionDelivery(env.client),
      pollMs: 50,
    });
    tornRelay.start();
    try {
      await outboxEmpty(torn, 20_000);
    } finally {
      await tornRelay.stop();
    }
    const signals = await sessionSignals(env.client, sessionId);
    expect(signals.map((s) => (s.args[0] as { turn: number }).turn)).toEqual([1]);
  });

  const session = () => {
    const id = uniqueSessionId('rec');
    sessions.push(id);
    return id;
  };
});
