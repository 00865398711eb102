// A client of an opd run samples a turn at T = 0.6 while the teacher is SGLang, which scores a teacher prefill at
// temperature 1 only: scored there, the turn would train an OPD advantage that compares a T = 1 teacher with
// π_old at 0.6. Instead the teacher activity fails at once, without retries and without asking the teacher, and
// the turn becomes an exclusion that says why. On the real Temporal server, the real control worker and a
// reference engine process (serving the policy and standing in at the teacher's URL, behind a counting proxy);
// the fake judge is the one double.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScoringActivities } from '../../activities/scoring-activities.js';
import type { ChatMessage } from '../../core/chat-messages.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { TEACHER_TEMPERATURE_REFUSED } from '../../core/teacher-temperature.js';
import { exclusionKey, teacherKey } from '../../core/turn-record.js';
import type { SampleExclusion } from '../../core/types.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { SglangAdapter } from '../../engines/sglang-adapter.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { scoreTurnWorkflowId } from '../../temporal/workflow-ids.js';
import { createControlWorker } from '../../workers/control-worker.js';
import { type CountingProxy, startCountingProxy } from '../support/counting-proxy.js';
import { engineCalls } from '../support/engine-calls.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { endSessionDirectly, recordTurnDirectly } from '../support/track1-harness.js';
import { testWorkflowBundle } from '../support/workflow-bundle.js';

describe('a turn drawn at T ≠ 1 reaching a teacher that scores at 1 only', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let teacher: CountingProxy;
  let judge: FakeJudge;
  let worker: Worker;
  let running: Promise<void>;
  let config: OpenClawConfig;
  let taskQueue: string;
  let store: FileSampleStore;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'teacher-temperature-'));
    const model = await makeTinyModel(join(dir, 'model'));
    engine = await startReferenceEngine({ model });
    teacher = await startCountingProxy(engine.url);
    judge = await startFakeJudge();
    taskQueue = uniqueTaskQueue('control');
    // No sampling.temperature: the configuration passes, and the client sends its own.
    const loaded = loadConfig(
      {},
      {
        runId: `run-${taskQueue}`.slice(0, 64),
        method: 'opd',
        dataDir: dir,
        engine: { url: engine.url },
        teacher: { url: teacher.url, kind: 'sglang' },
        judge: { baseUrl: judge.url, model: 'fake-judge' },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    config = loaded.config;
    store = new FileSampleStore(`${dir}/store`);
    worker = await createControlWorker(
      config,
      env.nativeConnection,
      env.client,
      { store },
      { taskQueue, workflowBundle: testWorkflowBundle() },
    );
    running = worker.run();
  }, 180_000);

  afterAll(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await teacher?.close();
    await engine?.stop();
    await judge?.close();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fails the teacher activity once, non-retryably, and excludes the turn naming engine and temperature', async () => {
    const sessionId = `s-${taskQueue}`;
    const turn = (messages: ChatMessage[], seed: number) =>
      recordTurnDirectly({
        engine: engineCalls(engine.url),
        store,
        client: env.client,
        config,
        taskQueue,
        sessionId,
        messages,
        seed,
        temperature: 0.6,
      });
    const first: ChatMessage[] = [{ role: 'user', content: 'What is the weather like?' }];
    const reply = await turn(first, 1);
    // "thanks": the fake hint judge accepts a hint for the first turn, so its teacher log-probs are asked for.
    await turn([...first, reply.message, { role: 'user', content: 'thanks, that helps' }], 2);
    await endSessionDirectly({ client: env.client, config, taskQueue, sessionId });

    const key = exclusionKey(reply.ref.sampleId);
    const deadline = Date.now() + 60_000;
    let exclusion = await store.get<SampleExclusion>(key);
    while (!exclusion) {
      if (Date.now() > deadline) throw new Error('the turn was not settled in time');
      await new Promise((resolve) => setTimeout(resolve, 250));
      exclusion = await store.get<SampleExclusion>(key);
    }
    expect(exclusion.reason).toBe('no-hint');
    expect(exclusion.detail).toContain(
      "the teacher refused: opd and combine need the teacher's log-probs at the sample's temperature 0.6",
    );
    expect(exclusion.detail).toContain(
      'SGLang as teacher (teacher.kind sglang) scores them at temperature 1',
    );

    // One attempt, failed as non-retryable; the teacher was never asked to prefill.
    const history = await env.client.workflow
      .getHandle(scoreTurnWorkflowId(reply.ref.sampleId))
      .fetchHistory();
    const events = history.events ?? [];
    const scheduled = events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'computeTeacherLogprobs',
    );
    const id = scheduled?.eventId?.toString();
    const started = events.find(
      (e) => e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === id,
    );
    const failed = events.find(
      (e) => e.activityTaskFailedEventAttributes?.scheduledEventId?.toString() === id,
    );
    expect(started?.activityTaskStartedEventAttributes?.attempt).toBe(1);
    const failure = failed?.activityTaskFailedEventAttributes?.failure?.applicationFailureInfo;
    expect(failure).toMatchObject({ type: TEACHER_TEMPERATURE_REFUSED, nonRetryable: true });
    expect(teacher.count('/generate')).toBe(0);

    // A teacher record scored at 1 before teachers were asked for the sample's temperature (a turn scored
    // across an upgrade) is not trained against π_old at 0.6 either: the turn goes on without it.
    await store.put(teacherKey(reply.ref.sampleId), { logProbs: [-1, -1], topK: null, temperature: 1 });
    const scoring = createScoringActivities({
      store,
      judge: { complete: async () => 'unused' },
      teacher: new SglangAdapter(teacher.url),
      teacherTopK: 0,
      client: env.client,
      controlTaskQueue: 'unused',
      trainingDefaults: () => ({ runId: 'unused', method: 'opd' }),
    });
    const assembled = await scoring.assembleSample({
      method: 'opd',
      sampleId: reply.ref.sampleId,
      evalScore: null,
      hint: { accepted: true },
      teacherStored: true,
      judgeRecord: { evalVotes: null, hintVotes: [1], hint: 'a hint' },
    });
    expect(assembled).toMatchObject({ ok: false, exclusion: { reason: 'no-hint' } });
    expect(assembled.ok ? '' : assembled.exclusion.detail).toContain(
      'the teacher log-probs are at temperature 1, the sample at 0.6',
    );
  }, 120_000);
});
