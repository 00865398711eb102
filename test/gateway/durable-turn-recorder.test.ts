// Turn numbering without memory: two recorders (two gateways) on one store agree on numbers, a retried
// request is recognised, and every recorded turn reaches its session workflow on the real Temporal server.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSampleStore } from '../../activities/sample-store.js';
import type { ChatMessage } from '../../core/chat-messages.js';
import { type TurnRecord, turnRecordKey } from '../../core/turn-record.js';
import { DurableTurnRecorder } from '../../gateway/durable-turn-recorder.js';
import type { TurnDraft } from '../../gateway/turn-recorder.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import {
  sessionSignals,
  TEST_SESSION_SETTINGS,
  terminateSessions,
  uniqueSessionId,
} from './gateway-fixture.js';

describe('DurableTurnRecorder', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let store: FileSampleStore;
  const sessions: string[] = [];

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'openclaw-recorder-'));
    store = new FileSampleStore(dir);
  });

  afterAll(async () => {
    if (env) await terminateSessions(env, sessions);
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const recorder = () =>
    new DurableTurnRecorder({
      store,
      client: env.client,
      session: TEST_SESSION_SETTINGS,
      taskQueue: uniqueTaskQueue('recorder'),
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

    const signals = await sessionSignals(env.client, sessionId);
    expect(signals).toHaveLength(4);
    expect(signals.every((s) => s.name === 'turnRecorded')).toBe(true);
    expect(new Set(signals.map((s) => (s.args[0] as { turn: number }).turn))).toEqual(new Set([2, 3]));

    await a.endSession(sessionId);
    expect((await sessionSignals(env.client, sessionId)).at(-1)?.name).toBe('sessionDone');
  });
});
