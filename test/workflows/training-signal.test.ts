import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScoringActivities } from '../../activities/scoring-activities.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { createTrainingActivities } from '../../activities/training-activities.js';
import type { ChatMessage } from '../../core/chat-messages.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { lossSettingsSchema, optimizerSettingsSchema } from '../../core/loss-settings.js';
import { turnSampleId } from '../../core/sample-id.js';
import { appendHintToMessages } from '../../core/teacher-context.js';
import { sampleKey, type TurnRecord, teacherKey, turnRecordKey } from '../../core/turn-record.js';
import type { TrainingSample } from '../../core/types.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { conversationIdentity, turnDigest } from '../../gateway/conversation-identity.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { createControlWorker, trainingInputFromConfig } from '../../workers/control-worker.js';
import { trainingStatusQuery } from '../../workflows/training-signals.js';
import { type EngineCalls, engineCalls } from '../support/engine-calls.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { endSessionDirectly, recordTurnDirectly } from '../support/track1-harness.js';
import { startTranscriptJudge, type TranscriptJudge } from '../support/transcript-judge-server.js';
import { testWorkflowBundle } from '../support/workflow-bundle.js';

const T = 0.6;
const KWARGS = { enable_thinking: false };
const CORRECTION = 'I meant the weather in Paris tomorrow, not in general.';

// What trains is what was sampled and rendered, on a real engine: a turn drawn at T = 0.6 with a template kwarg
// gets its teacher prompt rendered with that kwarg and its log-probs computed at 0.6 by teacher and trainer; a
// top-K distillation run trains end to end.
describe('the training signal on the real engine', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let engineClient: EngineCalls;
  let adapter: ReferenceAdapter;
  let store: FileSampleStore;
  let judge: TranscriptJudge;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'training-signal-'));
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')), trainer: true });
    engineClient = engineCalls(engine.url);
    adapter = new ReferenceAdapter(engine.url);
    store = new FileSampleStore(join(dir, 'store'));
    // The LLM-judge stand-in: it reads the whole next-state message, as a judge model would.
    judge = await startTranscriptJudge({
      verdicts: {
        [CORRECTION]: {
          score: 1,
          hint: 'The user asked about Paris tomorrow; answer for that place and day.',
        },
      },
    });
  }, 180_000);

  afterAll(async () => {
    await engine?.stop();
    await judge?.close();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A turn the engine sampled at T with the template kwarg, recorded as the gateway records it. */
  async function recordedTurn(sessionId: string): Promise<TurnRecord> {
    const messages: ChatMessage[] = [{ role: 'user', content: 'What is the weather like?' }];
    const completion = await adapter.complete({
      model: 'tiny',
      messages,
      maxTokens: 6,
      temperature: T,
      seed: 3,
      chatTemplateKwargs: KWARGS,
    });
    // The turn's identity as the gateway computes it: its prefix, and a digest of prefix and response.
    const { prefixHash } = conversationIdentity(messages, null);
    const response = { content: completion.message.content, reasoningContent: null, toolCalls: null };
    const record: TurnRecord = {
      sessionId,
      turn: 1,
      sampleId: turnSampleId(sessionId, 1, turnDigest(prefixHash, response, completion.responseIds)),
      prefixHash,
      continues: null,
      recordedAt: new Date().toISOString(),
      model: 'tiny',
      messages,
      tools: null,
      response,
      promptIds: completion.promptIds,
      responseIds: completion.responseIds,
      responseLogProbs: completion.logprobs,
      policyVersion: 0,
      finishReason: completion.finishReason,
      sampling: { temperature: T, topP: null, topK: null, minP: null, maxTokens: 6, seed: 3 },
      chatTemplateKwargs: KWARGS,
    };
    const key = turnRecordKey(record.sampleId);
    if (key === null) throw new Error(`malformed sample id ${record.sampleId}`);
    await store.put(key, record);
    return record;
  }

  it('renders the teacher prompt with the turn’s template kwargs and trains the sample at its temperature', async () => {
    const turn = await recordedTurn('kwargs');
    const scoring = createScoringActivities({
      store,
      judge: { complete: async () => 'unused' },
      teacher: adapter,
      teacherTopK: 0,
      client: env.client,
      controlTaskQueue: 'unused',
      trainingDefaults: () => ({ runId: 'unused', method: 'combine' }),
    });
    const hint = 'Mention the weather explicitly.';
    await scoring.computeTeacherLogprobs({ sampleId: turn.sampleId, hint });
    const teacher = await store.get<{ promptIds: number[]; temperature: number; logProbs: number[] }>(
      teacherKey(turn.sampleId),
    );
    const hinted = appendHintToMessages(turn.messages, hint);
    const withKwargs = await adapter.renderPrompt({ messages: hinted, chatTemplateKwargs: KWARGS });
    const without = await adapter.renderPrompt({ messages: hinted });
    // The template branches on the kwarg: the student's prompt and the teacher's have the same prefix.
    expect(withKwargs).not.toEqual(without);
    expect(teacher?.promptIds).toEqual(withKwargs);
    expect(teacher?.temperature).toBe(T);
    expect(teacher?.logProbs).toHaveLength(turn.responseIds.length);

    // combine, no hint accepted, vote +1: an RL-only row at T, without a teacher.
    const assembled = await scoring.assembleSample({
      method: 'combine',
      sampleId: turn.sampleId,
      evalScore: 1,
      hint: { accepted: false, reason: 'no-positive-vote' },
      teacherStored: false,
      judgeRecord: { evalVotes: [1], hintVotes: [-1], hint: null },
    });
    expect(assembled.ok).toBe(true);
    const sample = await store.get<TrainingSample>(sampleKey(turn.sampleId));
    expect(sample).toMatchObject({ kind: 'rl', temperature: T });
    expect(sample?.teacherLogProbs).toBeUndefined();

    // The trainer (still the served weights: nothing trained yet) scores the response at T exactly as the
    // engine reported it while sampling: with π_old = the rollout log-probs, the ratio is 1.
    const training = createTrainingActivities({
      store,
      trainer: new ReferenceTrainerBackend(engine.url),
      serving: adapter,
      checkpointDir: join(dir, 'checkpoints'),
    });
    const metrics = await training.trainStep({
      runId: 'kwargs',
      stepId: 'kwargs:v1',
      sampleIds: [turn.sampleId],
      method: 'combine',
      loss: lossSettingsSchema.parse({}),
      optimizer: optimizerSettingsSchema.parse({}),
      useRolloutLogprobs: false,
      staleSampleIds: [turn.sampleId],
      resume: { lastStepId: null, lastCheckpoint: null },
    });
    expect(metrics.train_rollout_logprob_abs_diff).toBeLessThan(1e-4);
    expect(Math.abs(metrics.ppo_kl ?? 1)).toBeLessThan(1e-4);
  }, 90_000);

  it('trains an opd run with top-K distillation: the teacher’s top-K rows stored once, the top-K loss', async () => {
    const taskQueue = uniqueTaskQueue('topk');
    const loaded = loadConfig(
      {},
      {
        runId: `topk-${taskQueue}`.slice(0, 64),
        method: 'opd',
        dataDir: dir,
        engine: { url: engine.url },
        teacher: { url: engine.url, topK: 4 },
        judge: { baseUrl: judge.url, model: 'fake-judge' },
        training: { batchSize: 1, learningRate: 1e-3 },
        session: { idleTimeoutMs: 600_000 },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    const config: OpenClawConfig = loaded.config;
    expect(trainingInputFromConfig(config).settings?.distillTopK).toBe(4);
    const worker: Worker = await createControlWorker(
      config,
      env.nativeConnection,
      env.client,
      { store },
      { taskQueue, workflowBundle: testWorkflowBundle() },
    );
    const running = worker.run();
    try {
      const sessionId = `topk-${taskQueue}`;
      const turn = (messages: ChatMessage[], seed: number) =>
        recordTurnDirectly({
          engine: engineClient,
          store,
          client: env.client,
          config,
          taskQueue,
          sessionId,
          messages,
          seed,
        });
      const first: ChatMessage[] = [{ role: 'user', content: 'What is the weather like?' }];
      const reply = await turn(first, 1);
      await turn([...first, reply.message, { role: 'user', content: CORRECTION }], 2);
      await endSessionDirectly({ client: env.client, config, taskQueue, sessionId: sessionId });
      const handle = env.client.workflow.getHandle(trainingWorkflowId(config.runId));
      const deadline = Date.now() + 90_000;
      let status = await handle.query(trainingStatusQuery).catch(() => null);
      while (!status || status.stepsCompleted < 1) {
        if (Date.now() > deadline) throw new Error(`no top-K step: ${JSON.stringify(status)}`);
        await new Promise((r) => setTimeout(r, 300));
        status = await handle.query(trainingStatusQuery).catch(() => null);
      }
      expect(status.settings.distillTopK).toBe(4);
      // The top-K loss has no PPO ratio: nothing is clipped; the distillation term is a KL (>= 0 here).
      expect(status.lastMetrics?.pg_clipfrac).toBe(0);
      expect(status.lastMetrics?.pg_loss).toBeGreaterThanOrEqual(0);
      const sampleId = reply.ref.sampleId;
      const sample = await store.get<TrainingSample>(sampleKey(sampleId));
      expect(sample).toMatchObject({ kind: 'opd', teacherTopKKey: teacherKey(sampleId) });
      expect(sample?.teacherTopkLogProbs).toBeUndefined();
      const teacher = await store.get<{ topK: { logProbs: number[][] } }>(teacherKey(sampleId));
      expect(teacher?.topK.logProbs[0]).toHaveLength(4);
      expect(judge.unexpected).toEqual([]);
      expect(judge.judged.map((step) => [step.kind, step.nextStateText])).toContainEqual([
        'hint',
        CORRECTION,
      ]);
    } finally {
      worker.shutdown();
      await running.catch(() => undefined);
    }
  }, 150_000);
});
