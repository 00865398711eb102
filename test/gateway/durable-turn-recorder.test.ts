// Turn identity without memory: two recorders (two gateways) on one store agree on every turn's id, a request
// finds the turn whose reply it kept by its exact prefix or, after compaction, by the reply alone, the work per
// turn is a constant number of store operations however long the session, and every recorded turn reaches its
// session workflow on the real Temporal server through the outbox relay. A crash between the record and its
// outbox entry loses nothing acknowledged.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../core/chat-messages.js';
import { type TurnRecord, turnRecordKey } from '../../core/turn-record.js';
import { DurableTurnRecorder } from '../../gateway/durable-turn-recorder.js';
import { sessionDelivery } from '../../gateway/outbox-delivery.js';
import { OutboxRelay } from '../../gateway/outbox-relay.js';
import type { TurnDraft } from '../../gateway/turn-recorder.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { CountingStore } from '../support/counting-store.js';
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
  let store: CountingStore;
  let relay: OutboxRelay;
  const sessions: string[] = [];
  const taskQueue = uniqueTaskQueue('recorder');

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'openclaw-recorder-'));
    store = new CountingStore(join(dir, 'store'));
    relay = new OutboxRelay({ outbox: store.outbox, deliver: sessionDelivery(env.client), pollMs: 50 });
    relay.start();
  });

  afterAll(async () => {
    await relay?.stop();
    if (env) await terminateSessions(env, sessions);
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const recorder = (on: FileSampleStore = store) =>
    new DurableTurnRecorder({
      store: on,
      session: TEST_SESSION_SETTINGS,
      taskQueue,
      retry: { attempts: 2, initialDelayMs: 10, maxDelayMs: 20 },
      onQueued: () => relay.notify(),
    });

  const draft = (sessionId: string, messages: ChatMessage[], reply = 'ok', ids = [3]): TurnDraft => ({
    sessionId,
    model: 'm',
    messages,
    tools: null,
    response: { content: reply, reasoningContent: null, toolCalls: null },
    promptIds: [1, 2],
    responseIds: ids,
    responseLogProbs: ids.map(() => -0.5),
    policyVersion: 2,
    finishReason: 'stop',
    sampling: { temperature: 1, topP: 1, topK: null, minP: null, maxTokens: null, seed: null },
    chatTemplateKwargs: null,
  });

  /** A first question, and the conversation that keeps its answer `reply` and asks the next. */
  const opening: ChatMessage[] = [{ role: 'user', content: 'q1' }];
  const next = (reply: string): ChatMessage[] => [
    ...opening,
    { role: 'assistant', content: reply },
    { role: 'user', content: 'q2' },
  ];

  it('gives the same request and response one id on every gateway, and another response another id', async () => {
    const sessionId = uniqueSessionId('rec');
    sessions.push(sessionId);
    const [a, b] = [recorder(), recorder()];
    const messages: ChatMessage[] = [{ role: 'user', content: 'q1' }];
    const same = draft(sessionId, messages, 'a1', [5, 6]);
    const other = draft(sessionId, messages, 'a1 again', [7]);
    const [first, second, sibling] = await Promise.all([a.record(same), b.record(same), a.record(other)]);

    expect(first?.ref.sampleId).toBe(second?.ref.sampleId);
    expect([first?.duplicate, second?.duplicate].filter(Boolean)).toHaveLength(1);
    expect(sibling?.ref.sampleId).not.toBe(first?.ref.sampleId);
    // Siblings: one prefix, two answers, each its own turn at the same position.
    expect(sibling?.ref.prefixHash).toBe(first?.ref.prefixHash);
    expect(first?.ref).toMatchObject({ turn: 1, continues: null, kind: 'main' });
    expect(first?.ref.sampleId).toMatch(new RegExp(`^${sessionId}:1-[0-9a-f]{16}$`));
    expect(first?.pairing).toBe('none');

    const stored = await store.get<TurnRecord>(turnRecordKey(sibling?.ref.sampleId ?? '') ?? '');
    expect(stored?.response.content).toBe('a1 again');
    // Answered once durable; delivered by the relay right after.
    await outboxEmpty(store, 20_000);
    const signals = await sessionSignals(env.client, sessionId);
    expect(signals).toHaveLength(3);
    expect(new Set(signals.map((s) => (s.args[0] as { sampleId: string }).sampleId)).size).toBe(2);

    await a.endSession(sessionId);
    await outboxEmpty(store, 20_000);
    expect((await sessionSignals(env.client, sessionId)).at(-1)?.name).toBe('sessionDone');
  });

  it('continues a conversation begun under an older derived id in that session', async () => {
    // A client without session ids was mid-conversation when derived ids changed form: its next turn must pair
    // with the turn it keeps, in the session that turn is in, instead of opening another.
    const [legacy, current] = [uniqueSessionId('legacy'), uniqueSessionId('current')];
    sessions.push(legacy, current);
    const persistence = recorder().persistence;
    const before = await persistence.persist(draft(legacy, opening, 'a1'));
    const after = await persistence.persist(draft(current, next('a1'), 'a2'), { legacySessionId: legacy });
    expect(after.ref).toMatchObject({ sessionId: legacy, continues: { sampleId: before.ref.sampleId } });
    expect(after.pairing).toBe('continuation');
    // A conversation begun under the current id stays in it.
    const fresh = await persistence.persist(draft(current, opening, 'b1'));
    const on = await persistence.persist(draft(current, next('b1'), 'b2'), { legacySessionId: legacy });
    expect(on.ref).toMatchObject({ sessionId: current, continues: { sampleId: fresh.ref.sampleId } });
  });

  it('finds the continued turn by its kept reply: exact prefix, then the reply alone, never the other branch', async () => {
    const sessionId = uniqueSessionId('pair');
    const persistence = recorder().persistence;
    const opening: ChatMessage[] = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'q1' },
    ];
    const t1 = await persistence.persist(draft(sessionId, opening, 'a1'));
    const t1b = await persistence.persist(draft(sessionId, opening, 'a1-regenerated', [9]));
    // The client sends the second answer back (with fields the engine never sent) and continues from it.
    const continued = [
      ...opening,
      { role: 'assistant', content: ' a1-regenerated ', refusal: null, reasoning_content: 'hmm' },
      { role: 'user', content: 'q2' },
    ];
    const t2 = await persistence.persist(draft(sessionId, continued, 'a2'));
    expect(t2.ref.continues?.sampleId).toBe(t1b.ref.sampleId);
    expect(t2.pairing).toBe('continuation');
    expect(t2.ref.continues?.sampleId).not.toBe(t1.ref.sampleId);

    // The order a client writes its keys in does not change a prefix.
    const respelled = await persistence.persist(
      draft(sessionId, [{ content: 'be brief', role: 'system' }, opening[1] as ChatMessage], 'a1'),
    );
    expect(respelled.duplicate).toBe(true);
    expect(respelled.ref.sampleId).toBe(t1.ref.sampleId);

    // Compacted: the opening is now a summary; the kept reply alone still names its turn.
    const compacted = [
      { role: 'system', content: 'summary: the user asked q1 and q2' },
      { role: 'assistant', content: 'a2' },
      { role: 'user', content: 'q3' },
    ];
    const t3 = await persistence.persist(draft(sessionId, compacted, 'a3'));
    expect(t3.pairing).toBe('reply');
    expect(t3.ref.continues?.sampleId).toBe(t2.ref.sampleId);

    // A reply the gateway never gave (a few-shot example in the prompt) pairs with nothing.
    const unknown = await persistence.persist(
      draft(sessionId, [
        ...opening,
        { role: 'assistant', content: 'example' },
        { role: 'user', content: 'q' },
      ]),
    );
    expect(unknown.pairing).toBe('unmatched');
    expect(unknown.ref.continues).toBeNull();
  });

  it('looks up the continued turn while the engine answers, and again when it was not there yet', async () => {
    // The gateway begins a main turn's lookup when it sends the request to the engine, so after the answer only
    // the write is left. What goes wrong without care: a turn another gateway recorded meanwhile (its files
    // appearing while this engine answered) would be missed, or a lookup made for one request used for another.
    const sessionId = uniqueSessionId('prep');
    const [here, other] = [recorder(), recorder()];
    const t1 = await here.record(draft(sessionId, opening, 'a1'));

    // Prepared, then recorded: the reads were made before the record, which only writes (the record, counted
    // with its two index entries).
    const messages = next('a1');
    const prepared = here.prepare({ sessionId, messages, tools: null });
    await prepared.lookup;
    const before = store.operations;
    const t2 = await here.record(draft(sessionId, messages, 'a2'), { prepared });
    expect(store.operations - before).toBe(3);
    expect(t2.pairing).toBe('continuation');
    expect(t2.ref.continues?.sampleId).toBe(t1.ref.sampleId);

    // The turn it continues is recorded by another gateway while this one's engine answers: found all the same.
    const branch = next('b1');
    const early = here.prepare({ sessionId, messages: branch, tools: null });
    expect((await early.lookup)?.found.pairing).toBe('unmatched');
    const b1 = await other.record(draft(sessionId, opening, 'b1', [8]));
    const b2 = await here.record(draft(sessionId, branch, 'b2'), { prepared: early });
    expect(b2.pairing).toBe('continuation');
    expect(b2.ref.continues?.sampleId).toBe(b1.ref.sampleId);

    // A lookup prepared for other messages is not used: the record looks up its own.
    const stale = here.prepare({ sessionId, messages: next('b1'), tools: null });
    const own = await here.record(draft(sessionId, next('a1'), 'a2-again', [11]), { prepared: stale });
    expect(own.ref.continues?.sampleId).toBe(t1.ref.sampleId);
  });

  it('does a constant number of store operations per turn, however long the session', async () => {
    const sessionId = uniqueSessionId('ops');
    const persistence = recorder().persistence;
    // A compacted conversation: the system prompt and a sliding window of the last messages.
    const window: ChatMessage[] = [];
    const perTurn: number[] = [];
    let previous: string | null = null;
    for (let turn = 1; turn <= 300; turn++) {
      window.push({ role: 'user', content: `message ${turn}` });
      const before = store.operations;
      const recorded = await persistence.persist(
        draft(sessionId, [{ role: 'system', content: 'agent' }, ...window.slice(-5)], `reply ${turn}`),
      );
      perTurn.push(store.operations - before);
      expect(recorded.ref.continues?.sampleId ?? null, `turn ${turn}`).toBe(previous);
      previous = recorded.ref.sampleId;
      window.push({ role: 'assistant', content: `reply ${turn}` });
    }
    // Two reads to find the continued turn, one create-if-absent, two index writes.
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(5);
    expect(perTurn.slice(-10)).toEqual(perTurn.slice(10, 20));
  });

  it('a crash between the record and its outbox entry: unacknowledged, and the retry delivers it', async () => {
    const sessionId = uniqueSessionId('torn');
    sessions.push(sessionId);
    // The entry's file is written beside the record's, but it cannot join the outbox: the record is written,
    // its entry is not, as if the process had died between the two.
    const torn = new FileSampleStore(join(dir, 'torn'));
    torn.outbox.commit = async () => {
      throw new Error('the process died here');
    };
    const turn = draft(sessionId, [{ role: 'user', content: 'hello' }]);
    await expect(recorder(torn).record(turn)).rejects.toThrow();
    const [written] = await torn.list(`turns/${sessionId}`);
    expect(written).toBeDefined();
    expect((await torn.outbox.stats()).depth).toBe(0);
    // The process comes back: the same folder, a new store.
    const back = new FileSampleStore(join(dir, 'torn'));

    // The client saw an error and retries the same request, answered the same: the recorder finds the record
    // and queues it now.
    const retried = await recorder(back).record(turn);
    expect(retried.duplicate).toBe(true);
    expect(turnRecordKey(retried.ref.sampleId)).toBe(written);
    const tornRelay = new OutboxRelay({
      outbox: back.outbox,
      deliver: sessionDelivery(env.client),
      pollMs: 50,
    });
    tornRelay.start();
    try {
      await outboxEmpty(back, 20_000);
    } finally {
      await tornRelay.stop();
    }
    const signals = await sessionSignals(env.client, sessionId);
    expect(signals.map((s) => (s.args[0] as { sampleId: string }).sampleId)).toEqual([retried.ref.sampleId]);
  });
});
