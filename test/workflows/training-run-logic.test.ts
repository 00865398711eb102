import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScoringActivities } from '../../activities/scoring-activities.js';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import { createTrainingActivities, type RunRecord } from '../../activities/training-activities.js';
import { latestPublished } from '../../cli/engine-launch.js';
import { loadConfig } from '../../core/config.js';
import { lineageKey, runRecordKey } from '../../core/training-keys.js';
import { exclusionKey, sampleKey, turnRecordKey } from '../../core/turn-record.js';
import type { SampleExclusion, SampleRef, TrainingSample } from '../../core/types.js';
import type { EngineAdapter, PublishRequest } from '../../engines/engine-adapter.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { CARRIED_MAX } from '../../workflows/training-queue.js';
import {
  type LineageEntry,
  lineageQuery,
  pauseUpdate,
  reconfigureUpdate,
  resumeUpdate,
  type SampleDelivery,
  sampleScoredSignal,
  type TrainingInput,
  type TrainingRunStatus,
  trainingStatusQuery,
} from '../../workflows/training-signals.js';
import { saveHistory } from '../support/histories.js';
import { RecordingTrainerDouble } from '../support/recording-trainer-double.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { testWorkflowBundle } from '../support/workflow-bundle.js';

// The training run's own logic, fast: the real workflow and the real training activities on the real Temporal
// server and a real sample store, with a recording trainer double (nothing is trained) and a serving double.
// The real reference engine covers the same behaviours end to end in training-controls.test.ts.
describe('trainingWorkflow logic', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let store: FileSampleStore;
  let trainer: RecordingTrainerDouble;
  let worker: Worker;
  let running: Promise<void>;
  let taskQueue: string;
  const served: { path: string; version: string }[] = [];

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'training-logic-'));
    store = new FileSampleStore(join(dir, 'store'));
    trainer = new RecordingTrainerDouble();
    taskQueue = uniqueTaskQueue('training-logic');
    // SERVING DOUBLE: records what publishWeights loads (the real engine's route is tested elsewhere).
    const serving = {
      publishWeights: async ({ path, version }: PublishRequest) => {
        served.push({ path, version });
      },
    } as unknown as EngineAdapter;
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: testWorkflowBundle(),
      activities: createTrainingActivities({
        store,
        trainer,
        serving,
        checkpointDir: join(dir, 'checkpoints'),
      }),
    });
    running = worker.run();
  }, 120_000);

  afterAll(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  let counter = 0;
  const newRunId = (name: string) => `${name}-${process.pid}-${(counter++).toString(36)}`;

  async function sample(sampleId: string, policyVersion: number, reward = 1): Promise<SampleRef> {
    const stored: TrainingSample = {
      sampleId,
      sessionId: sampleId.split(':')[0] ?? sampleId,
      turn: 1,
      tokens: [1, 2, 3, 4],
      responseLength: 2,
      lossMask: [1, 1],
      rolloutLogProbs: [-0.5, -0.7],
      reward,
      policyVersion,
      method: 'rl',
      kind: 'rl',
    };
    await store.put(sampleKey(sampleId), stored);
    return { sampleId, method: 'rl', kind: 'rl', policyVersion, reward, responseLength: 2 };
  }

  const delivered = (ref: SampleRef): SampleDelivery => ({ ok: true, sample: ref });
  const excluded = (sampleId: string): SampleDelivery => ({
    ok: false,
    exclusion: { sampleId, reason: 'no-signal', detail: 'no hint, vote 0' },
  });

  async function start(runId: string, settings: TrainingInput['settings'] = {}, initialPolicyVersion = 0) {
    return env.client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(runId),
      taskQueue,
      args: [{ runId, method: 'rl', settings, initialPolicyVersion } satisfies TrainingInput],
    });
  }

  async function waitFor(runId: string, done: (s: TrainingRunStatus) => boolean, timeoutMs = 90_000) {
    const handle = env.client.workflow.getHandle(trainingWorkflowId(runId));
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await handle.query(trainingStatusQuery).catch(() => null);
      if (status && done(status)) return status;
      if (Date.now() > deadline) throw new Error(`run ${runId} stuck at ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** The first execution of the run's chain that scheduled activity `type` (for recording its history). */
  async function executionWith(runId: string, type: string): Promise<string> {
    for (const { runId: execution } of await executions(runId)) {
      const history = await env.client.workflow
        .getHandle(trainingWorkflowId(runId), execution)
        .fetchHistory();
      const names = (history.events ?? []).map(
        (event) => event.activityTaskScheduledEventAttributes?.activityType?.name,
      );
      if (names.includes(type)) return execution;
    }
    throw new Error(`no execution of ${runId} scheduled ${type}`);
  }

  /**
   * Every execution of the run's chain (continue-as-new makes one per run), oldest first, with its history
   * length. Walked back from the newest run through each start event's `continuedExecutionRunId`: persistence,
   * not visibility, which may not list the newest runs yet on a loaded server.
   */
  async function executions(runId: string): Promise<{ runId: string; historyLength: number }[]> {
    const out: { runId: string; historyLength: number }[] = [];
    let execution: string | undefined;
    for (;;) {
      const handle = env.client.workflow.getHandle(trainingWorkflowId(runId), execution);
      const described = await handle.describe();
      out.unshift({ runId: described.runId, historyLength: described.historyLength });
      const started = (await handle.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
      execution = started?.continuedExecutionRunId ?? undefined;
      if (!execution) return out;
    }
  }

  async function signalAll(runId: string, deliveries: SampleDelivery[]): Promise<void> {
    const handle = env.client.workflow.getHandle(trainingWorkflowId(runId));
    for (let i = 0; i < deliveries.length; i += 50)
      await Promise.all(deliveries.slice(i, i + 50).map((d) => handle.signal(sampleScoredSignal, d)));
  }

  /**
   * Sends deliveries in bursts of `burst`, each once the run has taken the one before (its status counts
   * them): as scoring workflows finish, not as one flood. (Temporal refuses a continue-as-new while new
   * signals keep arriving, so a flood without a gap only continues as new when it ends; docs/operations.md.)
   */
  async function signalInBursts(
    runId: string,
    deliveries: SampleDelivery[],
    counted: (s: TrainingRunStatus) => number,
    burst = 100,
  ): Promise<void> {
    const before = counted(await waitFor(runId, () => true));
    for (let i = 0; i < deliveries.length; i += burst) {
      await signalAll(runId, deliveries.slice(i, i + burst));
      const expected = before + Math.min(deliveries.length, i + burst);
      await waitFor(runId, (s) => counted(s) >= expected);
    }
  }

  it('gives only the stale sample of a fresh batch its rollout log-probs as π_old', async () => {
    const runId = newRunId('stale');
    await start(runId, { batchSize: 3, maxPolicyLag: 1 }, 3);
    const refs = [
      await sample(`${runId}-a:1`, 3),
      await sample(`${runId}-b:1`, 2),
      await sample(`${runId}-old:1`, 1),
    ];
    const handle = env.client.workflow.getHandle(trainingWorkflowId(runId));
    for (const ref of refs) await handle.signal(sampleScoredSignal, delivered(ref));
    await waitFor(runId, (s) => s.stepsCompleted === 1);
    const step = trainer.steps.find((s) => s.stepId.startsWith(`${runId}:`));
    expect(step?.loss.useRolloutLogprobs).toBe(false);
    expect(step?.samples.map((s) => s.useRolloutLogprobs === true)).toEqual([false, false, true]);
    expect(step?.body.samples.map((s) => s.use_rollout_logprobs)).toEqual([undefined, undefined, true]);
  });

  it('excludes only the poisoned sample of a refused batch of 16 and trains the other 15', async () => {
    // One sample with a non-finite gradient used to make the trainer refuse its whole batch, and every sample
    // of it became an exclusion: 15 good samples lost for one bad one.
    const runId = newRunId('refused');
    const handle = await start(runId, { batchSize: 16 });
    const refs: SampleRef[] = [];
    // A reward this large overflows the gradient: the reference trainer refuses it (422, non-finite norm)
    // without naming a sample, so the run splits the batch to find it.
    for (let i = 0; i < 16; i++) refs.push(await sample(`${runId}-s${i}:1`, 0, i === 5 ? 1e30 : 1));
    const poisoned = refs[5]?.sampleId ?? '';
    await signalAll(runId, refs.map(delivered));
    const done = await waitFor(runId, (s) => s.samplesTrained + s.samplesExcluded === 16);
    expect(done).toMatchObject({ samplesTrained: 15, samplesExcluded: 1, pendingSamples: 0 });
    expect(done.exclusionsByReason).toEqual({ 'trainer-refused': 1 });
    expect(done.lastRefusal).toMatchObject({
      samples: 1,
      detail: expect.stringMatching(/non-finite gradient/),
    });
    const exclusion = await store.get<SampleExclusion & { sample?: TrainingSample }>(exclusionKey(poisoned));
    expect(exclusion).toMatchObject({ reason: 'trainer-refused', sample: { sampleId: poisoned } });
    expect(await store.get(sampleKey(poisoned))).toBeUndefined();
    // Each part that trained is a normal step: versions in order, each sample in exactly one of them.
    const lineage = await handle.query(lineageQuery);
    expect(lineage.map((e) => e.version)).toEqual(lineage.map((_, i) => i + 1));
    expect(done.policyVersion).toBe(lineage.length);
    const trainedIds = lineage.flatMap((e) => e.sampleIds);
    expect(trainedIds.sort()).toEqual(
      refs
        .map((r) => r.sampleId)
        .filter((id) => id !== poisoned)
        .sort(),
    );
    // The trainer's last call under each published step id (the refused ones under it were not applied) is
    // that version's part, without the poisoned sample.
    for (const entry of lineage) {
      const last = trainer.steps.filter((s) => s.stepId === entry.stepId).at(-1);
      expect(last?.samples.length).toBe(entry.sampleIds.length);
      expect(last?.samples.some((s) => s.reward > 1e20)).toBe(false);
    }
    // The run goes on with full batches.
    const next: SampleRef[] = [];
    for (let i = 0; i < 16; i++) next.push(await sample(`${runId}-n${i}:1`, done.policyVersion));
    await signalAll(runId, next.map(delivered));
    const after = await waitFor(runId, (s) => s.samplesTrained === 31);
    expect(after.stepsCompleted).toBe(lineage.length + 1);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    // `RECORD_HISTORIES=1` records this shape for the replay test (a refused batch split, its parts trained).
    if (process.env.RECORD_HISTORIES)
      await saveHistory(env, trainingWorkflowId(runId), 'training-workflow-isolated-refusal');
  });

  it('takes 3,000 exclusions while waiting with a bounded history and loses none', async () => {
    const runId = newRunId('exclusions');
    const eventsPerRun = 300;
    await start(runId, { batchSize: 4, continueAsNewAfterEvents: eventsPerRun });
    const ids = Array.from({ length: 3000 }, (_, i) => `${runId}-s${i}:1`);
    await signalInBursts(runId, ids.map(excluded), (s) => s.samplesExcluded);
    const status = await waitFor(runId, (s) => s.samplesExcluded === 3000, 180_000);
    expect(status.exclusionsByReason).toEqual({ 'no-signal': 3000 });
    // Deliveries repeated after several continue-as-new count once.
    await signalAll(runId, ids.slice(0, 200).map(excluded));
    await signalAll(runId, [excluded(`${runId}-last:1`)]);
    const after = await waitFor(runId, (s) => s.samplesExcluded === 3001);
    expect(after.exclusionsByReason).toEqual({ 'no-signal': 3001 });
    const runs = await executions(runId);
    // Every execution's history stays within the bound plus one burst.
    expect(runs.length).toBeGreaterThanOrEqual(3000 / (eventsPerRun + 100));
    for (const run of runs) expect(run.historyLength).toBeLessThan(eventsPerRun + 2 * 100);
    // Its first step, several executions after the start, still trains from the base (the trainer holds
    // another run's step here).
    await trainer.trainStep(`${runId}-elsewhere`, [], defaultLossConfig, defaultOptimizerConfig);
    const resets = trainer.resets;
    await signalAll(
      runId,
      await Promise.all([0, 1, 2, 3].map((i) => sample(`${runId}-t${i}:1`, 0).then(delivered))),
    );
    await waitFor(runId, (s) => s.stepsCompleted === 1);
    expect(trainer.resets).toBe(resets + 1);
  }, 240_000);

  it('spills what a paused run waits with beyond the bound to the store, and trains all of it once resumed', async () => {
    const runId = newRunId('backlog');
    const handle = await start(runId, { batchSize: 500, continueAsNewAfterEvents: 400 });
    await handle.executeUpdate(pauseUpdate);
    const total = 2 * CARRIED_MAX + 300;
    const refs: SampleRef[] = [];
    for (let i = 0; i < total; i++) refs.push(await sample(`${runId}-s${i}:1`, 0));
    await signalInBursts(runId, refs.map(delivered), (s) => s.pendingSamples);
    const waiting = await waitFor(runId, (s) => s.pendingSamples === total && (s.backlogSamples ?? 0) > 0);
    expect(waiting.stepsCompleted).toBe(0);
    // The carried state holds at most the bound's worth of references; the rest is in the store.
    expect(waiting.pendingSamples - (waiting.backlogSamples ?? 0)).toBeLessThanOrEqual(CARRIED_MAX + 400);
    await handle.executeUpdate(reconfigureUpdate, { args: [{ batchSize: 460 }] });
    await handle.executeUpdate(resumeUpdate);
    const done = await waitFor(runId, (s) => s.stepsCompleted === 5, 180_000);
    expect(done).toMatchObject({ samplesTrained: total, pendingSamples: 0, backlogSamples: 0 });
    const trainedIds = (await handle.query(lineageQuery)).flatMap((entry) => entry.sampleIds);
    // Each exactly once, none lost on the way through the store.
    expect(new Set(trainedIds).size).toBe(trainedIds.length);
    expect(trainedIds.sort()).toEqual(refs.map((ref) => ref.sampleId).sort());
    for (const run of await executions(runId)) expect(run.historyLength).toBeLessThan(400 + 2 * 100);
    if (process.env.RECORD_HISTORIES) {
      const id = trainingWorkflowId(runId);
      await saveHistory(
        env,
        id,
        'training-workflow-spills-backlog',
        await executionWith(runId, 'spillPending'),
      );
      await saveHistory(
        env,
        id,
        'training-workflow-loads-backlog',
        await executionWith(runId, 'loadBacklog'),
      );
    }
  }, 240_000);

  it('starts a run id again as a new incarnation: its own step ids and folders, trained from the base', async () => {
    const runId = newRunId('again');
    const first = await start(runId, { batchSize: 1 });
    await signalAll(runId, [delivered(await sample(`${runId}-a:1`, 0))]);
    await waitFor(runId, (s) => s.stepsCompleted === 1);
    await first.terminate('the operator stops it');
    const resetsBefore = trainer.resets;

    const second = await start(runId, { batchSize: 1 });
    expect(second.firstExecutionRunId).not.toBe(first.firstExecutionRunId);
    await signalAll(runId, [delivered(await sample(`${runId}-b:1`, 0))]);
    const status = await waitFor(runId, (s) => s.stepsCompleted === 1);
    expect(status.incarnation).toBe(second.firstExecutionRunId);
    expect(status.lastStepId).toBe(`${runId}:${second.firstExecutionRunId}:v1`);
    expect(status.lastCheckpoint).toBe(join(dir, 'checkpoints', runId, second.firstExecutionRunId, 'v1'));
    // The trainer held the first incarnation's step: the new one's first step reset it to the base.
    expect(trainer.resets).toBe(resetsBefore + 1);
    const firstV1 = join(dir, 'checkpoints', runId, first.firstExecutionRunId, 'v1');
    expect(await readdir(firstV1)).toContain('config.json');
    expect(served.at(-1)).toEqual({ path: status.lastCheckpoint, version: '1' });
    // An engine restart serves the current incarnation's newest version, never the old one's.
    expect(await store.get<RunRecord>(runRecordKey(runId))).toMatchObject({
      incarnation: second.firstExecutionRunId,
    });
    const loaded = loadConfig({}, { runId, dataDir: dir });
    if (!loaded.ok) throw new Error(loaded.error);
    expect((await latestPublished(loaded.config))?.checkpoint).toBe(status.lastCheckpoint);
  });

  it("treats a restarted run's samples served by the incarnation before it as off-policy", async () => {
    // A run id started again counts versions from 0 again while the engine still serves the old run's v2: its
    // samples used to be trained as fresh (negative or no lag, π_old = the new weights, ratio 1).
    const runId = newRunId('restarted');
    const scoring = createScoringActivities({
      store,
      judge: undefined as never,
      teacher: undefined as never,
      teacherTopK: 0,
      client: env.client,
      controlTaskQueue: taskQueue,
      trainingDefaults: (id, method) => ({ runId: id, method, settings: { batchSize: 2 } }),
    });
    /** A scored turn recorded at `recordedAt`, delivered the way scoring delivers it. */
    const deliver = async (name: string, policyVersion: number, recordedAt: string) => {
      const ref = await sample(`${runId}-${name}:1`, policyVersion);
      await store.put(turnRecordKey(ref.sampleId) ?? '', { sampleId: ref.sampleId, recordedAt });
      await scoring.deliverToTraining({ runId, method: 'rl', result: delivered(ref) });
      return ref;
    };
    const first = await start(runId, { batchSize: 1 });
    await deliver('a', 0, new Date().toISOString());
    await deliver('b', 1, new Date().toISOString());
    await waitFor(runId, (s) => s.policyVersion === 2);
    await first.terminate('the operator stops it');
    const servedByFirst = new Date().toISOString();

    // The next delivery starts the run again; the engine still serves the first incarnation's v2.
    await deliver('x', 2, servedByFirst);
    await deliver('y', 0, '2000-01-01T00:00:00.000Z');
    const one = await waitFor(
      runId,
      (s) => s.stepsCompleted === 1 && s.incarnation !== first.firstExecutionRunId,
    );
    const second = one.incarnation ?? '';
    const record = await store.get<RunRecord>(runRecordKey(runId));
    expect(record).toMatchObject({
      incarnation: second,
      earlier: [{ incarnation: first.firstExecutionRunId }],
    });
    // Served by the second incarnation's v1 now; a late turn at v1 recorded before then was the first one's.
    await deliver('w', 1, servedByFirst);
    await deliver('u', 1, new Date().toISOString());
    await waitFor(runId, (s) => s.stepsCompleted === 2);

    const received = (version: number) =>
      trainer.steps.filter((s) => s.stepId === `${runId}:${second}:v${version}`).at(-1);
    const offPolicy = (version: number) =>
      received(version)?.samples.map((s) => s.useRolloutLogprobs === true);
    // x: another incarnation's v2 (above the run's v0); y: the base, before any version was published.
    expect(offPolicy(1)).toEqual([true, false]);
    // w: v1 of the first incarnation (same number, other weights); u: the second incarnation's own v1.
    expect(offPolicy(2)).toEqual([true, false]);
    expect(received(2)?.body.samples.map((s) => s.use_rollout_logprobs)).toEqual([true, undefined]);
  });

  it('drops a sample served at a version above the run’s own under the drop policy, as off-policy', async () => {
    const runId = newRunId('ahead');
    await start(runId, { batchSize: 1, stalenessPolicy: 'drop' });
    // v3 while the run is at v0: weights it never published (another incarnation's), not a fresh sample.
    const ahead = await sample(`${runId}-ahead:1`, 3);
    await signalAll(runId, [delivered(ahead)]);
    const dropped = await waitFor(runId, (s) => s.samplesExcluded === 1);
    expect(dropped.exclusionsByReason).toEqual({ 'stale-policy': 1 });
    const exclusion = await store.get<SampleExclusion>(exclusionKey(ahead.sampleId));
    expect(exclusion?.detail).toMatch(/served by another incarnation of the run, or by a version above/);
    await signalAll(runId, [delivered(await sample(`${runId}-own:1`, 0))]);
    expect(await waitFor(runId, (s) => s.stepsCompleted === 1)).toMatchObject({ samplesTrained: 1 });
  });

  it('keeps the newest keepCheckpoints versions and every lineage record', async () => {
    const runId = newRunId('retention');
    const handle = await start(runId, { batchSize: 1, keepCheckpoints: 2 });
    for (let i = 0; i < 4; i++) {
      await signalAll(runId, [delivered(await sample(`${runId}-s${i}:1`, i))]);
      await waitFor(runId, (s) => s.stepsCompleted === i + 1);
    }
    const incarnation = handle.firstExecutionRunId;
    expect((await readdir(join(dir, 'checkpoints', runId, incarnation))).sort()).toEqual(['v3', 'v4']);
    for (const version of [1, 2, 3, 4]) {
      const entry = await store.get<LineageEntry>(lineageKey(runId, version, incarnation));
      expect(entry?.sampleIds).toEqual([`${runId}-s${version - 1}:1`]);
    }
    expect((await handle.query(lineageQuery)).map((e) => e.version)).toEqual([1, 2, 3, 4]);
  });
});
