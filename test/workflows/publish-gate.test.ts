// The publish gate on real parts: the reference engine process (serving and its trainer), the real training
// workflow and activities on the run's Temporal server, a real sample store. Replies are scored by the
// deterministic `style:vowels` rule; the threshold decides whether a version can be served at all, so every
// outcome is known in advance.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateActivities } from '../../activities/gate-activities.js';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { createTrainingActivities } from '../../activities/training-activities.js';
import { formatLineage } from '../../cli/operator-commands.js';
import { formatTrainingStatus } from '../../cli/train-status.js';
import { gateDecisionKey } from '../../core/training-keys.js';
import type { GateSettings } from '../../core/training-settings.js';
import { sampleKey } from '../../core/turn-record.js';
import type { SampleRef, TrainingSample } from '../../core/types.js';
import { createEngineAdapter } from '../../engines/engine-adapters.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import {
  lineageQuery,
  rollbackUpdate,
  sampleScoredSignal,
  type TrainingInput,
  type TrainingRunStatus,
  trainingStatusQuery,
} from '../../workflows/training-signals.js';
import { saveHistory } from '../support/histories.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { testWorkflowBundle } from '../support/workflow-bundle.js';

const EVAL_SET = [
  { id: 'greet', messages: [{ role: 'user', content: 'Say hello.' }] },
  { id: 'sum', messages: [{ role: 'user', content: 'What is two and two?' }] },
];

describe('the publish gate', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let store: FileSampleStore;
  let trainer: ReferenceTrainerBackend;
  let worker: Worker;
  let running: Promise<void>;
  let taskQueue: string;
  let evalSet: string;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'publish-gate-'));
    engine = await startReferenceEngine({
      model: await makeTinyModel(join(dir, 'model')),
      trainer: true,
      // This checkout's engine package, whichever the Python environment has installed.
      env: { ...process.env, PYTHONPATH: fileURLToPath(new URL('../../engine', import.meta.url)) },
    });
    store = new FileSampleStore(join(dir, 'store'));
    trainer = new ReferenceTrainerBackend(engine.url);
    evalSet = join(dir, 'eval.jsonl');
    await writeFile(evalSet, `${EVAL_SET.map((item) => JSON.stringify(item)).join('\n')}\n`);
    taskQueue = uniqueTaskQueue('publish-gate');
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: testWorkflowBundle(),
      activities: createTrainingActivities({
        store,
        trainer,
        serving: createEngineAdapter('reference', engine.url),
        checkpointDir: join(dir, 'checkpoints'),
      }),
    });
    running = worker.run();
  }, 180_000);

  afterAll(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await engine?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const gate = (threshold: number): GateSettings => ({
    evalSet,
    scorer: 'style:vowels',
    threshold,
    samples: 2,
    maxTokens: 8,
  });

  async function sample(sampleId: string, policyVersion = 0): Promise<SampleRef> {
    const stored: TrainingSample = {
      sampleId,
      sessionId: sampleId.split(':')[0] ?? sampleId,
      turn: 1,
      tokens: [100, 101, 102, 103, 104, 105],
      responseLength: 3,
      lossMask: [1, 1, 1],
      rolloutLogProbs: [-5, -5, -5],
      reward: -1,
      policyVersion,
      method: 'rl',
      kind: 'rl',
    };
    await store.put(sampleKey(sampleId), stored);
    return { sampleId, method: 'rl', kind: 'rl', policyVersion, reward: -1, responseLength: 3 };
  }

  async function waitFor(runId: string, done: (s: TrainingRunStatus) => boolean) {
    const handle = env.client.workflow.getHandle(trainingWorkflowId(runId));
    const deadline = Date.now() + 150_000;
    for (;;) {
      const status = await handle.query(trainingStatusQuery).catch(() => null);
      if (status && done(status)) return status;
      if (Date.now() > deadline) throw new Error(`run ${runId} stuck at ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  async function start(runId: string, threshold: number) {
    const settings: TrainingInput['settings'] = {
      batchSize: 1,
      optimizer: { learningRate: 5e-2 },
      gate: gate(threshold),
    };
    return env.client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(runId),
      taskQueue,
      args: [{ runId, method: 'rl', settings } satisfies TrainingInput],
    });
  }

  it('holds a version that scores below the served one: the engine keeps serving, the next step trains from the served weights', async () => {
    const runId = `gate-held-${process.pid}-${Date.now().toString(36)}`;
    const servedBefore = await createEngineAdapter('reference', engine.url).weightVersion();
    // A threshold of -1 asks a version to beat the served one by a whole point on a [0, 1] scale: none can.
    const handle = await start(runId, -1);
    await handle.signal(sampleScoredSignal, { ok: true, sample: await sample(`held-a:${runId}:1`) });
    const first = await waitFor(runId, (s) => s.stepsCompleted === 1);
    expect(first).toMatchObject({ policyVersion: 1, servedVersion: 0 });
    expect(first.held?.[0]).toMatchObject({ version: 1, baseline: expect.any(Number) });
    expect(first.held?.[0]?.reason).toMatch(
      /^score \d\.\d{4} < v0's \d\.\d{4} - threshold -1 \(style:vowels, 2 items\)$/,
    );
    // Served nothing new.
    expect(await createEngineAdapter('reference', engine.url).weightVersion()).toBe(servedBefore);
    const shown = formatTrainingStatus(first);
    expect(shown).toContain('served version   0 (the publish gate held newer versions)');
    expect(shown).toContain(`held             v1: ${first.held?.[0]?.reason}`);

    const [v1] = await handle.query(lineageQuery, { version: 1 });
    expect(v1?.evaluation).toMatchObject({
      decision: 'held',
      baselineVersion: 0,
      items: 2,
      scorer: 'style:vowels',
    });
    expect(v1?.publishedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(formatLineage(v1 ? [v1] : [])).toMatch(
      /EVALUATION[\s\S]*held \d\.\d{3} \(v0 \d\.\d{3}\) style:vowels/,
    );

    // A sample of the served version is on-policy however many versions were held.
    await handle.signal(sampleScoredSignal, { ok: true, sample: await sample(`held-a:${runId}:2`) });
    const second = await waitFor(runId, (s) => s.stepsCompleted === 2);
    expect(second).toMatchObject({ policyVersion: 2, servedVersion: 0, samplesExcluded: 0 });
    expect(second.held?.map((h) => h.version)).toEqual([2, 1]);
    // v2 trained from the base (the served weights): the trainer no longer holds v1's step.
    const info = (await (await fetch(`${engine.url}/trainer_info`)).json()) as { step_ids: string[] };
    expect(info.step_ids).toEqual([`${runId}:${second.incarnation}:v2`]);
    const [v2] = await handle.query(lineageQuery, { version: 2 });
    // The same served version, the same recorded baseline: it was evaluated once.
    expect(v2?.evaluation?.baseline).toBe(v1?.evaluation?.baseline);
    await handle.terminate();
    // `RECORD_HISTORIES=1` records this run's shape (two held versions) for the replay test.
    if (process.env.RECORD_HISTORIES)
      await saveHistory(env, trainingWorkflowId(runId), 'training-workflow-publish-gate');
  }, 300_000);

  it('serves a version that does not regress, and compares the next with its recorded score', async () => {
    const runId = `gate-served-${process.pid}-${Date.now().toString(36)}`;
    // A threshold of 1 lets any score on a [0, 1] scale through.
    const handle = await start(runId, 1);
    await handle.signal(sampleScoredSignal, { ok: true, sample: await sample(`served-a:${runId}:1`) });
    const first = await waitFor(runId, (s) => s.stepsCompleted === 1);
    expect(first).toMatchObject({ policyVersion: 1, servedVersion: 1, held: [] });
    expect(await createEngineAdapter('reference', engine.url).weightVersion()).toBe('1');
    await handle.signal(sampleScoredSignal, { ok: true, sample: await sample(`served-a:${runId}:2`, 1) });
    await waitFor(runId, (s) => s.stepsCompleted === 2);
    const [v1, v2] = await handle.query(lineageQuery);
    expect(v1?.evaluation?.decision).toBe('served');
    expect(v2?.evaluation).toMatchObject({
      decision: 'served',
      baselineVersion: 1,
      baseline: v1?.evaluation?.score,
    });
    await handle.terminate();
  }, 300_000);

  it('rolls back to a held version: served at once as a new version, and the next step trains from it', async () => {
    const runId = `gate-rollback-${process.pid}-${Date.now().toString(36)}`;
    const handle = await start(runId, -1);
    await handle.signal(sampleScoredSignal, { ok: true, sample: await sample(`rollback-a:${runId}:1`) });
    await waitFor(runId, (s) => s.stepsCompleted === 1 && s.servedVersion === 0);
    const refused = await handle.executeUpdate(rollbackUpdate, { args: [{ to: 7 }] }).then(
      () => null,
      (error: unknown) => error as Error & { cause?: Error },
    );
    expect(refused?.cause?.message).toMatch(/v7 is not in this run's lineage/);
    const request = { args: [{ to: 1 }] as [{ to: number }], updateId: `rollback-${runId}` };
    const entry = await handle.executeUpdate(rollbackUpdate, request);
    expect(entry).toMatchObject({ version: 2, rollbackOf: 1, sampleIds: [] });
    // The same request again is the same update: no second rollback.
    expect(await handle.executeUpdate(rollbackUpdate, request)).toEqual(entry);
    const status = await handle.query(trainingStatusQuery);
    expect(status).toMatchObject({ policyVersion: 2, servedVersion: 2 });
    expect(await createEngineAdapter('reference', engine.url).weightVersion()).toBe('2');
    expect(formatLineage(await handle.query(lineageQuery))).toContain('rollback of v1');
    // The next step trains from v1's weights: the trainer holds v1's step and the new one.
    await handle.signal(sampleScoredSignal, { ok: true, sample: await sample(`rollback-a:${runId}:2`, 2) });
    const after = await waitFor(runId, (s) => s.stepsCompleted === 2);
    const info = (await (await fetch(`${engine.url}/trainer_info`)).json()) as { step_ids: string[] };
    expect(info.step_ids).toEqual([`${runId}:${after.incarnation}:v1`, `${runId}:${after.incarnation}:v3`]);
    await handle.terminate();
  }, 300_000);

  it('a retried evaluation returns the recorded decision, even once the trainer holds other weights', async () => {
    const runId = `gate-retry-${process.pid}-${Date.now().toString(36)}`;
    const stepId = `${runId}:i:v1`;
    const gateActivities = createGateActivities({ store, trainerOf: () => trainer });
    await trainer.resetToBase();
    await trainer.trainStep(
      stepId,
      [
        {
          tokens: [100, 101, 102, 103],
          responseLength: 2,
          lossMask: [1, 1],
          rolloutLogProbs: [-5, -5],
          reward: 1,
        },
      ],
      { ...defaultLossConfig, method: 'grpo' },
      { ...defaultOptimizerConfig, learningRate: 1e-2 },
    );
    const input = {
      runId,
      incarnation: 'i',
      stepId,
      version: 1,
      servedVersion: 0,
      servedCheckpoint: null,
      gate: gate(0),
    };
    const decided = await gateActivities.evaluateCandidate(input);
    expect(await store.get(gateDecisionKey(stepId))).toEqual(decided);
    // The trainer forgets the step (a restart): evaluating again would fail, the recorded decision does not.
    await trainer.resetToBase();
    expect(await gateActivities.evaluateCandidate(input)).toEqual(decided);
  }, 300_000);
});
