// The full count after each crash: waits until the system is quiet, then checks the store, the training run,
// its lineage, its history and the engine against the turns the client saw acknowledged.
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { expect } from 'vitest';
import type { TrainStepInput } from '../../activities/training-activities.js';
import { type TurnRecord, turnRecordKey } from '../../core/turn-record.js';
import type { SampleExclusion, TrainingSample } from '../../core/types.js';
import type { SampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import {
  type LineageEntry,
  lineageQuery,
  type TrainingRunStatus,
  trainingStatusQuery,
} from '../../workflows/training-signals.js';
import type { EngineCalls } from '../support/engine-calls.js';
import { historyValue } from '../support/temporal.js';
import type { ExpectedOutcome } from './conversation.js';

export interface CountContext {
  client: Client;
  store: SampleStore;
  /** The engine itself (not through any proxy): what it serves and what its trainer applied. */
  engine: EngineCalls;
  runId: string;
  batchSize: number;
}

export interface StoreSnapshot {
  samples: Map<string, TrainingSample>;
  exclusions: Map<string, SampleExclusion>;
  /** `lineage/<runId>/<incarnation>/v*` records, by version. */
  lineage: LineageEntry[];
}

export interface TrainerInfo {
  step_count: number;
  step_ids: string[];
  training: boolean;
}

/** One trainStep the training workflow scheduled: its input and how many attempts it took. */
export interface ScheduledStep {
  input: TrainStepInput;
  attempts: number;
  completed: boolean;
}

export interface CountResult {
  snapshot: StoreSnapshot;
  status: TrainingRunStatus;
  steps: ScheduledStep[];
}

/** Ids under `samples/` or `exclusions/` (the last key part, URI-decoded). */
async function readKeyed<T>(store: SampleStore, prefix: string): Promise<Map<string, T>> {
  const found = new Map<string, T>();
  for (const key of await store.list(prefix)) {
    const value = await store.get<T>(key);
    if (value !== undefined) found.set(decodeURIComponent(key.split('/').at(-1) ?? ''), value);
  }
  return found;
}

export async function readStore(store: SampleStore, runId: string): Promise<StoreSnapshot> {
  const lineage = [
    ...(await readKeyed<LineageEntry>(store, `lineage/${encodeURIComponent(runId)}`)).values(),
  ];
  return {
    samples: await readKeyed<TrainingSample>(store, 'samples'),
    exclusions: await readKeyed<SampleExclusion>(store, 'exclusions'),
    lineage: lineage.sort((a, b) => a.version - b.version),
  };
}

export async function trainerInfo(engine: EngineCalls): Promise<TrainerInfo> {
  return (await engine.request('GET', '/trainer_info')) as TrainerInfo;
}

export async function servedVersion(engine: EngineCalls): Promise<number> {
  return Number((await engine.modelInfo()).weight_version);
}

/**
 * Polls (never a fixed sleep) until every decided turn is a sample or an exclusion, the run counted all of
 * them, no batch is due or training, and the engine serves the run's version; twice in a row, unchanged.
 */
export async function waitUntilSettled(
  ctx: CountContext,
  decided: string[],
  timeoutMs: number,
  explain: () => string,
): Promise<{ snapshot: StoreSnapshot; status: TrainingRunStatus }> {
  const handle = ctx.client.workflow.getHandle(trainingWorkflowId(ctx.runId));
  const deadline = Date.now() + timeoutMs;
  let previous = '';
  let why = 'not polled yet';
  for (;;) {
    try {
      const snapshot = await readStore(ctx.store, ctx.runId);
      const status = await handle.query(trainingStatusQuery);
      const served = await servedVersion(ctx.engine);
      const unsettled = decided.filter((id) => !snapshot.samples.has(id) && !snapshot.exclusions.has(id));
      const fingerprint = JSON.stringify({
        samples: snapshot.samples.size,
        exclusions: snapshot.exclusions.size,
        lineage: snapshot.lineage.length,
        status: [status.policyVersion, status.pendingSamples, status.samplesTrained, status.samplesExcluded],
        served,
      });
      why =
        unsettled.length > 0
          ? `turns not settled yet: ${unsettled.join(', ')}`
          : status.samplesTrained + status.pendingSamples !== snapshot.samples.size
            ? `run has ${status.samplesTrained} trained + ${status.pendingSamples} pending of ${snapshot.samples.size} stored samples`
            : status.samplesExcluded !== snapshot.exclusions.size
              ? `run counted ${status.samplesExcluded} of ${snapshot.exclusions.size} exclusions`
              : status.pendingSamples >= ctx.batchSize
                ? `a batch is due or training (${status.pendingSamples} pending)`
                : snapshot.lineage.length !== status.policyVersion || served !== status.policyVersion
                  ? `versions differ: lineage ${snapshot.lineage.length}, run ${status.policyVersion}, engine ${served}`
                  : fingerprint !== previous
                    ? 'not yet stable'
                    : '';
      if (why === '') return { snapshot, status };
      previous = fingerprint;
    } catch (error) {
      why = `not reachable: ${(error as Error).message}`;
      previous = '';
    }
    if (Date.now() > deadline) throw new Error(`not settled within ${timeoutMs} ms: ${why}\n${explain()}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Every trainStep the training workflow scheduled, with its decoded input and attempts (from its history). */
export async function scheduledSteps(client: Client, runId: string): Promise<ScheduledStep[]> {
  const history = await client.workflow.getHandle(trainingWorkflowId(runId)).fetchHistory();
  const steps = new Map<string, ScheduledStep>();
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'trainStep') {
      const payload = scheduled.input?.payloads?.[0] as Payload | undefined;
      if (!payload) throw new Error('trainStep scheduled without input');
      const input = await historyValue<TrainStepInput>(client, payload);
      steps.set(String(event.eventId), { input, attempts: 0, completed: false });
    }
    const started = event.activityTaskStartedEventAttributes;
    const startedStep = started && steps.get(String(started.scheduledEventId));
    if (startedStep) startedStep.attempts = started.attempt ?? 1;
    const done = event.activityTaskCompletedEventAttributes;
    const doneStep = done && steps.get(String(done.scheduledEventId));
    if (doneStep) doneStep.completed = true;
  }
  return [...steps.values()];
}

/** Attempt numbers of every started `activityType` in a workflow's history (a retry shows as attempt > 1). */
export async function activityAttempts(
  client: Client,
  workflowId: string,
  activityType: string,
): Promise<number[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const ofType = new Set<string>();
  const attempts: number[] = [];
  for (const event of history.events ?? []) {
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === activityType)
      ofType.add(String(event.eventId));
    const started = event.activityTaskStartedEventAttributes;
    if (started && ofType.has(String(started.scheduledEventId))) attempts.push(started.attempt ?? 1);
  }
  return attempts;
}

/** Every turn record in the store is whole: it parses, and its token arrays agree. */
export async function checkTurnRecords(store: SampleStore): Promise<number> {
  const keys = await store.list('turns');
  for (const key of keys) {
    const record = await store.get<TurnRecord>(key);
    expect(record, key).toBeDefined();
    if (!record) continue;
    expect(turnRecordKey(record.sampleId), key).toBe(key);
    expect(record.promptIds.length, key).toBeGreaterThan(0);
    expect(record.responseIds.length, key).toBeGreaterThan(0);
    expect(record.responseLogProbs, key).toHaveLength(record.responseIds.length);
  }
  return keys.length;
}

/**
 * The full count. `expected`: every acknowledged turn whose outcome is decided; `open`: acknowledged turns
 * still waiting for their next state (they must be neither sample nor exclusion yet).
 */
export async function fullCount(
  ctx: CountContext,
  expected: Map<string, ExpectedOutcome>,
  open: string[],
  explain: () => string,
  timeoutMs = 120_000,
): Promise<CountResult> {
  const { snapshot, status } = await waitUntilSettled(ctx, [...expected.keys()], timeoutMs, explain);
  const { samples, exclusions, lineage } = snapshot;

  // Every acknowledged turn is exactly one sample or one exclusion, the one the judge's rule gives.
  for (const [id, outcome] of expected) {
    const sample = samples.get(id);
    const exclusion = exclusions.get(id);
    expect(Boolean(sample) !== Boolean(exclusion), `${id}: sample xor exclusion`).toBe(true);
    if ('sample' in outcome) expect(sample?.reward, `${id} reward`).toBe(outcome.sample);
    else expect(exclusion?.reason, `${id} exclusion`).toBe(outcome.exclusion);
  }
  for (const id of open) expect(samples.has(id) || exclusions.has(id), `${id} is still open`).toBe(false);
  // And nothing else: no sample or exclusion appears that no client saw acknowledged.
  expect([...samples.keys(), ...exclusions.keys()].sort()).toEqual([...expected.keys()].sort());
  await checkTurnRecords(ctx.store);

  // Lineage: versions 1..N, one step each, no sample in two versions, every trained id a stored sample.
  const versions = lineage.map((entry) => entry.version);
  expect(versions).toEqual(Array.from({ length: lineage.length }, (_, i) => i + 1));
  const trained: string[] = lineage.flatMap((entry) => entry.sampleIds);
  expect(new Set(trained).size, 'a sample trained twice').toBe(trained.length);
  for (const id of trained) expect(samples.has(id), `trained ${id} is a stored sample`).toBe(true);
  for (const entry of lineage) {
    // One incarnation of the run id (the one running), whose id every step id carries.
    expect(entry.incarnation).toBe(status.incarnation);
    expect(entry.stepId).toBe(`${ctx.runId}:${entry.incarnation}:v${entry.version}`);
    expect(entry.sampleIds).toHaveLength(ctx.batchSize);
  }
  const handle = ctx.client.workflow.getHandle(trainingWorkflowId(ctx.runId));
  expect(await handle.query(lineageQuery)).toEqual(lineage);

  // The run's own counts agree with the store and the lineage.
  const last = lineage.at(-1);
  expect(status.policyVersion).toBe(lineage.length);
  expect(status.stepsCompleted).toBe(lineage.length);
  expect(status.samplesTrained).toBe(trained.length);
  expect(status.pendingSamples).toBe(samples.size - trained.length);
  expect(status.pendingSamples).toBeLessThan(ctx.batchSize);
  expect(status.samplesExcluded).toBe(exclusions.size);
  const byReason: Record<string, number> = {};
  for (const exclusion of exclusions.values())
    byReason[exclusion.reason] = (byReason[exclusion.reason] ?? 0) + 1;
  expect(status.exclusionsByReason).toEqual(byReason);
  expect(status.lastStepId).toBe(last?.stepId ?? null);
  expect(status.lastCheckpoint).toBe(last?.checkpoint ?? null);

  // The engine serves the last version, and its trainer applied each step exactly once, in order.
  expect(await servedVersion(ctx.engine)).toBe(lineage.length);
  const trainer = await trainerInfo(ctx.engine);
  expect(trainer.step_count).toBe(lineage.length);
  expect(trainer.step_ids).toEqual(lineage.map((entry) => entry.stepId));

  // Each step resumed from the one before it: its input named the previous step and its checkpoint.
  const steps = await scheduledSteps(ctx.client, ctx.runId);
  expect(steps.map((step) => step.input.stepId)).toEqual(lineage.map((entry) => entry.stepId));
  steps.forEach((step, index) => {
    const before = lineage[index - 1];
    expect(step.completed).toBe(true);
    expect(step.input.sampleIds).toEqual(lineage[index]?.sampleIds);
    // The run's first step trains from the base (the run id started anew): nothing else may be in the trainer.
    expect(step.input.resume).toEqual({
      lastStepId: before?.stepId ?? null,
      lastCheckpoint: before?.checkpoint ?? null,
      ...(index === 0 && { fromBase: true }),
    });
  });
  return { snapshot, status, steps };
}
