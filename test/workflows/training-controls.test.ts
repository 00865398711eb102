import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { checkpointPath, createTrainingActivities } from '../../activities/training-activities.js';
import { TRAINER_LOST_STEP } from '../../activities/training-errors.js';
import { latestPublished } from '../../cli/engine-launch.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { exclusionKey, sampleKey } from '../../core/turn-record.js';
import type { SampleExclusion, SampleRef, TrainingSample } from '../../core/types.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingInputFromConfig } from '../../workers/control-worker.js';
import {
  lineageQuery,
  pauseUpdate,
  reconfigureUpdate,
  resumeUpdate,
  sampleScoredSignal,
  type TrainingRunStatus,
  trainingStatusQuery,
} from '../../workflows/training-signals.js';
import { engineCalls } from '../support/engine-calls.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { createTestControlWorker } from '../support/workflow-bundle.js';

// The training run's controls on a real server, worker and engine: start-input validation, pause/resume,
// reconfigure (validated), duplicate deliveries, the staleness bound in both of its policies, a batch the
// engine refuses, and a run id started again.
describe('trainingWorkflow controls', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let worker: Worker;
  let running: Promise<void>;
  let config: OpenClawConfig;
  let store: FileSampleStore;
  let taskQueue: string;
  let tokens: { prompt: number[]; response: number[]; logprobs: number[] };

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'training-controls-'));
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')), trainer: true });
    taskQueue = uniqueTaskQueue('training');
    const loaded = loadConfig({}, { dataDir: dir, engine: { url: engine.url }, temporal: { taskQueue } });
    if (!loaded.ok) throw new Error(loaded.error);
    config = loaded.config;
    store = new FileSampleStore(join(dir, 'store'));
    worker = await createTestControlWorker(config, env, { store });
    running = worker.run();
    const sampled = await engineCalls(engine.url).generate({
      text: 'The answer is',
      sampling_params: { temperature: 1, max_new_tokens: 6, seed: 1, ignore_eos: true },
      return_logprob: true,
    });
    const prompt = (await engineCalls(engine.url).request('POST', '/tokenize', {
      text: 'The answer is',
    })) as {
      tokens: number[];
    };
    tokens = {
      prompt: prompt.tokens,
      response: sampled.output_ids,
      logprobs: (sampled.meta_info.output_token_logprobs ?? []).map((e) => e[0] ?? 0),
    };
  }, 180_000);

  afterAll(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await engine?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Stores a real rl sample produced by policy `policyVersion` and returns its reference. */
  async function storedSample(sampleId: string, policyVersion: number, reward = 1): Promise<SampleRef> {
    const sample: TrainingSample = {
      sampleId,
      sessionId: sampleId.split(':')[0] ?? sampleId,
      turn: 1,
      tokens: [...tokens.prompt, ...tokens.response],
      responseLength: tokens.response.length,
      lossMask: tokens.response.map(() => 1),
      rolloutLogProbs: tokens.logprobs,
      reward,
      policyVersion,
      method: 'rl',
      kind: 'rl',
    };
    await store.put(sampleKey(sampleId), sample);
    return {
      sampleId,
      method: 'rl',
      kind: 'rl',
      policyVersion,
      reward,
      responseLength: sample.responseLength,
    };
  }

  async function waitFor(
    runId: string,
    done: (status: TrainingRunStatus) => boolean,
  ): Promise<TrainingRunStatus> {
    const handle = env.client.workflow.getHandle(trainingWorkflowId(runId));
    const deadline = Date.now() + 60_000;
    for (;;) {
      const status = await handle.query(trainingStatusQuery).catch(() => null);
      if (status && done(status)) return status;
      if (Date.now() > deadline) throw new Error(`run ${runId} stuck at ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async function startRun(runId: string, settings: Record<string, unknown>) {
    const input = trainingInputFromConfig(config, runId, 'rl');
    return env.client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(runId),
      taskQueue,
      args: [{ ...input, settings: { ...input.settings, ...settings } }],
    });
  }

  it('fails fast, without retrying, on an invalid start input', async () => {
    const handle = await env.client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(`bad-${taskQueue}`),
      taskQueue,
      args: [{ runId: 'has spaces', method: 'rl', settings: { batchSize: 0 } }],
    });
    const failure = await handle.result().then(
      () => null,
      (error: Error) => error,
    );
    expect((failure?.cause as Error | undefined)?.message).toMatch(
      /invalid training input: runId: .*settings\.batchSize/,
    );
    // Non-retryable: the first attempt failed the run, there was no second one.
    const description = await handle.describe();
    expect(description.status.name).toBe('FAILED');
  });

  it('starts from a run id alone, as pasted into the Temporal UI: every other field takes its default', async () => {
    const runId = `min-${taskQueue}`.slice(0, 60);
    const handle = await env.client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(runId),
      taskQueue,
      args: [{ runId }],
    });
    try {
      const status = await waitFor(runId, () => true);
      expect(status.method).toBe('combine');
      expect(status.policyVersion).toBe(0);
      expect(status.settings.batchSize).toBe(16);
    } finally {
      await handle.terminate('test done');
    }
  });

  it('pauses, resumes, reconfigures with validation, and ignores duplicate deliveries', async () => {
    const runId = `ctl-${taskQueue}`.slice(0, 60);
    const handle = await startRun(runId, { batchSize: 2 });
    const paused = await handle.executeUpdate(pauseUpdate);
    expect(paused.paused).toBe(true);

    const a = await storedSample(`${runId}-a:1`, 0);
    const b = await storedSample(`${runId}-b:1`, 0);
    await handle.signal(sampleScoredSignal, { ok: true, sample: a });
    await handle.signal(sampleScoredSignal, { ok: true, sample: a });
    await handle.signal(sampleScoredSignal, { ok: true, sample: b });
    const waiting = await waitFor(runId, (s) => s.pendingSamples === 2);
    expect(waiting.stepsCompleted).toBe(0);

    await expect(
      handle.executeUpdate(reconfigureUpdate, { args: [{ batchSize: -3 }] }),
    ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
    const changed = await handle.executeUpdate(reconfigureUpdate, {
      args: [{ batchSize: 1, optimizer: { learningRate: 1e-4 } }],
    });
    expect(changed.settings.batchSize).toBe(1);
    expect(changed.settings.optimizer.learningRate).toBe(1e-4);

    await handle.executeUpdate(resumeUpdate);
    const trained = await waitFor(runId, (s) => s.stepsCompleted === 2);
    expect(trained.samplesTrained).toBe(2);
    expect(trained.pendingSamples).toBe(0);
    const lineage = await handle.query(lineageQuery);
    expect(lineage.flatMap((e) => e.sampleIds).sort()).toEqual([a.sampleId, b.sampleId].sort());
  }, 90_000);

  it('drops samples older than maxPolicyLag with a recorded reason under the drop policy', async () => {
    const runId = `drop-${taskQueue}`.slice(0, 60);
    const handle = await startRun(runId, { batchSize: 1, maxPolicyLag: 0, stalenessPolicy: 'drop' });
    await handle.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`${runId}-a:1`, 0) });
    await waitFor(runId, (s) => s.policyVersion === 1);
    // Produced by version 0 while the run is at version 1: one version too old.
    await handle.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`${runId}-b:1`, 0) });
    const status = await waitFor(runId, (s) => s.samplesExcluded === 1);
    expect(status.exclusionsByReason).toEqual({ 'stale-policy': 1 });
    expect(status.policyVersion).toBe(1);
    expect((await store.get<SampleExclusion>(exclusionKey(`${runId}-b:1`)))?.reason).toBe('stale-policy');
    // Moved, not copied: the turn is an exclusion and no longer a sample.
    expect(await store.get(sampleKey(`${runId}-b:1`))).toBeUndefined();
  }, 90_000);

  it('trains stale samples with their rollout log-probs under the rollout-logprobs policy', async () => {
    const runId = `lag-${taskQueue}`.slice(0, 60);
    const handle = await startRun(runId, {
      batchSize: 1,
      maxPolicyLag: 0,
      stalenessPolicy: 'rollout-logprobs',
    });
    await handle.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`${runId}-a:1`, 0) });
    await waitFor(runId, (s) => s.policyVersion === 1);
    await handle.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`${runId}-b:1`, 0) });
    const status = await waitFor(runId, (s) => s.policyVersion === 2);
    expect(status.samplesExcluded).toBe(0);
    // With rollout log-probs as π_old the ratio is no longer exactly 1: the stored log-probs came from v0.
    expect(status.lastMetrics?.train_rollout_logprob_abs_diff).toBeGreaterThan(0);
  }, 90_000);

  it('splits a batch the engine refuses for a non-finite gradient: the poisoned sample excluded, the other trained', async () => {
    const runId = `poison-${taskQueue}`.slice(0, 60);
    const handle = await startRun(runId, { batchSize: 2 });
    const good = await storedSample(`${runId}-a:1`, 0);
    // A reward this large overflows the gradient: the engine refuses the step (422) and keeps its weights.
    const poisoned = await storedSample(`${runId}-p:1`, 0, 1e30);
    await handle.signal(sampleScoredSignal, { ok: true, sample: good });
    await handle.signal(sampleScoredSignal, { ok: true, sample: poisoned });
    const refused = await waitFor(runId, (s) => s.samplesExcluded === 1 && s.samplesTrained === 1);
    expect(refused.exclusionsByReason).toEqual({ 'trainer-refused': 1 });
    expect(refused.lastRefusal?.detail).toMatch(/HTTP 422.*non-finite gradient norm/);
    const exclusion = await store.get<SampleExclusion>(exclusionKey(poisoned.sampleId));
    expect(exclusion).toMatchObject({ reason: 'trainer-refused' });
    expect(exclusion?.detail).toContain(refused.lastRefusal?.stepId ?? '?');
    expect((await handle.query(lineageQuery)).map((e) => e.sampleIds)).toEqual([[good.sampleId]]);
    await handle.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`${runId}-b:1`, 1) });
    await handle.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`${runId}-c:1`, 1) });
    const trained = await waitFor(runId, (s) => s.stepsCompleted === 2);
    expect(trained).toMatchObject({ policyVersion: 2, samplesTrained: 3, samplesExcluded: 1 });
  }, 90_000);

  it('trains 15 of 16 samples in one step when the engine names the one it refuses', async () => {
    // One sample the trainer cannot take (a token id outside the vocabulary) used to exclude all 16 of its
    // batch; the engine names it (`samples[9].tokens`), so only it is excluded and the other 15 train.
    const runId = `named-${taskQueue}`.slice(0, 60);
    const handle = await startRun(runId, { batchSize: 16 });
    const refs: SampleRef[] = [];
    for (let i = 0; i < 16; i++) refs.push(await storedSample(`${runId}-s${i}:1`, 0));
    const bad = refs[9]?.sampleId ?? '';
    const stored = await store.get<TrainingSample>(sampleKey(bad));
    if (!stored) throw new Error('sample not stored');
    await store.put(sampleKey(bad), {
      ...stored,
      tokens: [...tokens.prompt, 10_000_000, ...tokens.response.slice(1)],
    });
    for (const ref of refs) await handle.signal(sampleScoredSignal, { ok: true, sample: ref });
    const done = await waitFor(runId, (s) => s.samplesTrained + s.samplesExcluded === 16);
    expect(done).toMatchObject({
      samplesTrained: 15,
      samplesExcluded: 1,
      stepsCompleted: 1,
      policyVersion: 1,
    });
    expect(done.exclusionsByReason).toEqual({ 'trainer-refused': 1 });
    expect(done.lastRefusal?.detail).toMatch(/samples\[9\]\.tokens: token id 10000000 is outside/);
    expect((await store.get<SampleExclusion>(exclusionKey(bad)))?.reason).toBe('trainer-refused');
    const [entry] = await handle.query(lineageQuery);
    expect(entry?.sampleIds).toEqual(refs.map((r) => r.sampleId).filter((id) => id !== bad));
    expect(entry?.metrics.samples).toBe(15);
  }, 90_000);

  it('trains a run id started again from the base, in folders of its own, keeping its newest keepCheckpoints', async () => {
    const runId = `again-${taskQueue}`.slice(0, 60);
    const first = await startRun(runId, { batchSize: 1 });
    await first.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`${runId}-a:1`, 0) });
    const one = await waitFor(runId, (s) => s.policyVersion === 1);
    await first.terminate('stopped by the operator');

    // The new incarnation keeps one checkpoint folder (retention on the real trainer, below).
    const second = await startRun(runId, { batchSize: 1, keepCheckpoints: 1 });
    await second.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`${runId}-b:1`, 0) });
    const two = await waitFor(runId, (s) => s.policyVersion === 1 && s.incarnation !== one.incarnation);
    expect(two.lastCheckpoint).not.toBe(one.lastCheckpoint);
    expect(two.lastMetrics?.duplicate ?? 0).toBe(0);
    const steps = async (checkpoint: string | null) =>
      Object.keys(
        (
          JSON.parse(await readFile(join(checkpoint ?? '', 'trainer_state', 'state.json'), 'utf8')) as {
            steps: Record<string, unknown>;
          }
        ).steps,
      );
    // The new incarnation's v1 holds its own step only (trained from the base); the old v1 is untouched.
    expect(await steps(two.lastCheckpoint)).toEqual([two.lastStepId]);
    expect(await steps(one.lastCheckpoint)).toEqual([one.lastStepId]);
    expect((await latestPublished({ ...config, runId }))?.checkpoint).toBe(two.lastCheckpoint);
    expect(String((await engineCalls(engine.url).modelInfo()).weight_version)).toBe('1');

    // Retention: v2 (weights and optimizer state) replaces v1's folder; every lineage record stays.
    await second.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`${runId}-c:1`, 1) });
    const three = await waitFor(runId, (s) => s.policyVersion === 2 && s.incarnation === two.incarnation);
    const incarnation = two.incarnation ?? '';
    expect(three.lastCheckpoint).toBe(checkpointPath(join(dir, 'checkpoints'), runId, 2, incarnation));
    expect(await readdir(join(dir, 'checkpoints', runId, incarnation))).toEqual(['v2']);
    expect(await steps(three.lastCheckpoint)).toEqual([two.lastStepId, three.lastStepId]);
    expect((await second.query(lineageQuery)).map((entry) => entry.version)).toEqual([1, 2]);
    expect(await steps(one.lastCheckpoint)).toEqual([one.lastStepId]);
    expect(String((await engineCalls(engine.url).modelInfo()).weight_version)).toBe('2');
  }, 150_000);

  it('refuses to publish a step the trainer no longer holds, and republishes one already saved', async () => {
    const trainer = new ReferenceTrainerBackend(engine.url);
    const activities = createTrainingActivities({
      store,
      trainer,
      serving: new ReferenceAdapter(engine.url),
      checkpointDir: join(dir, 'lost-step'),
    });
    // As after an engine restart between trainStep and publishWeights: nothing to publish but base weights.
    await expect(
      activities.publishWeights({ runId: 'lost', stepId: 'lost:v7', version: 7 }),
    ).rejects.toMatchObject({
      type: TRAINER_LOST_STEP,
      nonRetryable: true,
    });
    // Saved before the restart: the checkpoint is whole, so it is (re)loaded into serving, not refused.
    const path = join(dir, 'lost-step', 'lost', 'v7');
    await trainer.saveCheckpoint(path);
    await expect(activities.publishWeights({ runId: 'lost', stepId: 'lost:v7', version: 7 })).resolves.toBe(
      path,
    );
    expect(String((await engineCalls(engine.url).modelInfo()).weight_version)).toBe('7');
  }, 60_000);
});
