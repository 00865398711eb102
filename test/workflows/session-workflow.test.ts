import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ChatMessage } from '../../core/chat-messages.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { exclusionKey, sampleKey } from '../../core/turn-record.js';
import type { TurnRef } from '../../core/types.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { sessionDelivery } from '../../gateway/outbox-delivery.js';
import type { OutboxEntry } from '../../store/outbox.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { scoreTurnWorkflowId, sessionWorkflowId, trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { sessionStatusQuery, turnRecordedSignal } from '../../workflows/session-signals.js';
import { trainingStatusQuery } from '../../workflows/training-signals.js';
import { engineCalls } from '../support/engine-calls.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { saveHistory } from '../support/histories.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { endSessionDirectly, recordTurnDirectly, sessionInputFor } from '../support/track1-harness.js';
import { createTestControlWorker } from '../support/workflow-bundle.js';

// A long session: it continues-as-new every two turns, a duplicate delivery of an old turn changes
// nothing, the idle timer closes it, and every turn is settled exactly once.
describe('sessionWorkflow over a long session', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let judge: FakeJudge;
  let worker: Worker;
  let running: Promise<void>;
  let config: OpenClawConfig;
  let store: FileSampleStore;
  let taskQueue: string;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'session-'));
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')), trainer: true });
    judge = await startFakeJudge();
    taskQueue = uniqueTaskQueue('session');
    const loaded = loadConfig(
      {},
      {
        runId: `sess-${taskQueue}`.slice(0, 60),
        method: 'rl',
        dataDir: dir,
        engine: { url: engine.url },
        teacher: { url: engine.url },
        judge: { baseUrl: judge.url, model: 'fake', votes: 1 },
        training: { batchSize: 100 },
        // Longer than any gap between two recorded turns on a loaded machine (2 s was not): the session
        // must stay open until all six arrive, then the test waits for the idle close once.
        session: { idleTimeoutMs: 10_000, reopenHorizonMs: 0, continueAsNewAfterTurns: 2 },
        temporal: { taskQueue },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    config = loaded.config;
    store = new FileSampleStore(join(dir, 'store'));
    worker = await createTestControlWorker(config, env, { store });
    running = worker.run();
  }, 180_000);

  afterAll(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await engine?.stop();
    await judge?.close();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** One main turn of `sessionId` after `messages`, recorded as the gateway does (and delivered, unless not). */
  const recordTurn = (sessionId: string, messages: ChatMessage[], seed: number, deliver = true) =>
    recordTurnDirectly({
      engine: engineCalls(engine.url),
      store,
      client: env.client,
      config,
      taskQueue,
      sessionId,
      messages: [...messages],
      seed,
      deliver,
    });

  it('continues as new, ignores a duplicate, closes when idle, and settles every turn once', async () => {
    const sessionId = `long-${taskQueue}`;
    const messages: ChatMessage[] = [{ role: 'user', content: 'Plan my week.' }];
    const record = (seed: number) => recordTurn(sessionId, messages, seed);
    const first = await record(1);
    const refs: TurnRef[] = [first.ref];
    const firstRunId = (await env.client.workflow.getHandle(sessionWorkflowId(sessionId)).describe()).runId;
    messages.push(first.message);
    for (let turn = 2; turn <= 6; turn++) {
      messages.push({ role: 'user', content: turn % 2 === 0 ? 'thanks!' : 'that is wrong' });
      const next = await record(turn);
      refs.push(next.ref);
      messages.push(next.message);
    }
    // Each turn continues the one before it, found by the reply it kept.
    for (let turn = 2; turn <= 6; turn++)
      expect(refs[turn - 1]?.continues?.sampleId, `turn ${turn}`).toBe(refs[turn - 2]?.sampleId);
    // A late duplicate of turn 2, as a retried gateway would send it.
    await env.client.workflow.signalWithStart('sessionWorkflow', {
      workflowId: sessionWorkflowId(sessionId),
      taskQueue,
      args: [sessionInputFor(config, sessionId)],
      signal: turnRecordedSignal,
      signalArgs: [refs[1] as TurnRef],
    });

    const handle = env.client.workflow.getHandle(sessionWorkflowId(sessionId));
    const result = (await handle.result()) as { end: string; turnsScored: number };
    expect(result.end).toBe('idle');
    const firstRun = await env.client.workflow.getHandle(sessionWorkflowId(sessionId), firstRunId).describe();
    expect(firstRun.status.name).toBe('CONTINUED_AS_NEW');
    await expect(handle.query(sessionStatusQuery)).resolves.toMatchObject({ done: false, turnsScored: 6 });

    // Turns 1-5 have next states (+1 after "thanks", -1 after "wrong"); turn 6 was settled by the idle timer.
    const training = env.client.workflow.getHandle(trainingWorkflowId(config.runId));
    const deadline = Date.now() + 60_000;
    while ((await training.query(trainingStatusQuery).catch(() => null))?.pendingSamples !== 5) {
      if (Date.now() > deadline) throw new Error('samples did not all arrive');
      await new Promise((r) => setTimeout(r, 200));
    }
    for (let turn = 1; turn <= 5; turn++) {
      const sample = await store.get<{ reward: number }>(sampleKey(refs[turn - 1]?.sampleId ?? ''));
      expect(sample?.reward, `turn ${turn}`).toBe(turn % 2 === 1 ? 1 : -1);
    }
    expect((await store.get<{ reason: string }>(exclusionKey(refs[5]?.sampleId ?? '')))?.reason).toBe(
      'no-next-state',
    );
    const status = await training.query(trainingStatusQuery);
    expect(status.samplesExcluded).toBe(1);
  }, 120_000);

  // A gateway back from a stop delivers a session's backlog at once, then the client ends the session: turns
  // and the done signal arrive while the session is starting a turn's scoring, also on its way to a new run.
  // None of them may leave with the run they arrived in.
  it('settles every turn of a backlog and ends on its done signal, across continue-as-new', async () => {
    const sessionId = `burst-${taskQueue}`;
    const messages: ChatMessage[] = [{ role: 'user', content: 'Sort my inbox.' }];
    const refs: TurnRef[] = [];
    const turns = 12;
    for (let turn = 1; turn <= turns; turn++) {
      if (turn > 1) messages.push({ role: 'user', content: turn % 2 === 0 ? 'thanks!' : 'that is wrong' });
      const next = await recordTurn(sessionId, messages, 100 + turn, false);
      refs.push(next.ref);
      messages.push(next.message);
    }
    expect((await store.outbox.stats()).depth).toBe(turns);
    // Delivered as a relay does (in order, the gateway's own delivery), spaced so that signals land while the
    // session awaits a scoring's start, also on its way to a new run.
    const { entries } = await store.outbox.claim('backlog-test', 120_000, { sessions: 1, entries: turns });
    expect(entries).toHaveLength(turns);
    const signal = sessionDelivery(env.client);
    const paces = [0, 30, 15, 45, 5, 25];
    const deliver = async (from: number, to: number) => {
      for (let n = from; n < to; n++) {
        await new Promise((resolve) => setTimeout(resolve, paces[n % paces.length]));
        await signal(entries[n] as OutboxEntry, Date.now() + 10_000);
      }
    };
    const handle = env.client.workflow.getHandle(sessionWorkflowId(sessionId));
    await deliver(0, 1);
    // One turn cannot end a run (two per run), so this is the session's first run.
    const firstRunId = (await handle.describe()).runId;
    await deliver(1, 4);
    // Four turns and no done signal: the first run must continue as new. A loaded worker may otherwise take the
    // whole backlog and the done signal in one run, and end there without ever continuing.
    await vi.waitFor(async () => expect((await handle.describe()).runId).not.toBe(firstRunId), {
      timeout: 60_000,
      interval: 100,
    });
    await deliver(4, turns);
    await store.outbox.remove(entries);
    await endSessionDirectly({ client: env.client, config, taskQueue, sessionId });

    const result = (await handle.result()) as { end: string; turnsScored: number };
    expect(result).toMatchObject({ end: 'done-signal', turnsScored: turns });
    const firstRun = await env.client.workflow.getHandle(sessionWorkflowId(sessionId), firstRunId).describe();
    expect(firstRun.status.name).toBe('CONTINUED_AS_NEW');
    for (const ref of refs)
      await expect(
        env.client.workflow.getHandle(scoreTurnWorkflowId(ref.sampleId)).result(),
        `turn ${ref.turn}`,
      ).resolves.toBeDefined();
    // Its last run: the done signal came while it was on its way to a new run (`RECORD_HISTORIES=1`).
    if (process.env.RECORD_HISTORIES)
      await saveHistory(env, sessionWorkflowId(sessionId), 'session-workflow-late-signals');
  }, 120_000);
});
