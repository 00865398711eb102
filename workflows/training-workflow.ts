// The training loop of one run (`training-<runId>`): collects scored samples, trains a step whenever a batch
// of usable samples is full, publishes the new weights to the serving engine (policy version + 1), records
// which samples made which version, and continues-as-new every few steps. Samples are references; the token
// arrays stay in the sample store.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { TrainingActivities } from '../activities/training-activities.js';
import {
  describeZodError,
  type ResolvedTrainingSettings,
  reconfigurationSchema,
  trainingInputSchema,
} from '../core/training-settings.js';
import type { SampleRef, TrainingStatus } from '../core/types.js';
import { trainAndPublish } from './train-and-publish.js';
import {
  type LineageEntry,
  lineageQuery,
  pauseUpdate,
  reconfigureUpdate,
  resumeUpdate,
  type SampleDelivery,
  sampleScoredSignal,
  type TrainingCarry,
  type TrainingInput,
  type TrainingRunStatus,
  trainingStatusQuery,
} from './training-signals.js';

const RECENT_IDS_KEPT = 5_000;
const LINEAGE_KEPT = 100;

/** Training steps and publishing: long, heartbeating, retried until they succeed (they are idempotent). */
function trainerCalls(heartbeatTimeoutMs: number, taskQueue: string | undefined) {
  return proxyActivities<TrainingActivities>({
    taskQueue,
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
}

// Store writes only: quick, so a short timeout lets a dead worker's attempt be retried soon.
const bookkeeping = proxyActivities<TrainingActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

export async function trainingWorkflow(rawInput: TrainingInput): Promise<void> {
  const parsed = trainingInputSchema.safeParse(rawInput);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `invalid training input: ${describeZodError(parsed.error)}`,
      'InvalidInput',
    );
  }
  const { runId, method } = parsed.data;
  let settings: ResolvedTrainingSettings = parsed.data.settings;
  const carried: TrainingCarry = rawInput.carried ?? {
    policyVersion: parsed.data.initialPolicyVersion,
    stepsCompleted: 0,
    samplesTrained: 0,
    samplesExcluded: 0,
    exclusionsByReason: {},
    pending: [],
    recentIds: [],
    lastStepId: null,
    lastCheckpoint: null,
    lastMetrics: null,
    lineage: [],
    paused: false,
  };
  const state: TrainingCarry = { ...carried, pending: [...carried.pending], lineage: [...carried.lineage] };
  const recent = new Set(state.recentIds);
  let stepsThisRun = 0;

  const status = (): TrainingRunStatus => {
    const base: TrainingStatus = {
      runId,
      method,
      policyVersion: state.policyVersion,
      stepsCompleted: state.stepsCompleted,
      pendingSamples: state.pending.length,
      samplesTrained: state.samplesTrained,
      samplesExcluded: state.samplesExcluded,
      paused: state.paused,
      lastStepId: state.lastStepId,
    };
    return {
      ...base,
      exclusionsByReason: { ...state.exclusionsByReason },
      lastMetrics: state.lastMetrics,
      lastCheckpoint: state.lastCheckpoint,
      settings,
    };
  };

  const exclude = (reason: string): void => {
    state.samplesExcluded++;
    state.exclusionsByReason[reason] = (state.exclusionsByReason[reason] ?? 0) + 1;
  };

  setHandler(sampleScoredSignal, (delivery: SampleDelivery) => {
    const id = delivery.ok ? delivery.sample.sampleId : delivery.exclusion.sampleId;
    if (recent.has(id)) return;
    recent.add(id);
    if (delivery.ok) state.pending.push(delivery.sample);
    else exclude(delivery.exclusion.reason);
  });
  setHandler(trainingStatusQuery, status);
  setHandler(lineageQuery, (filter) =>
    filter?.version === undefined
      ? [...state.lineage]
      : state.lineage.filter((e) => e.version === filter.version),
  );
  setHandler(pauseUpdate, () => {
    state.paused = true;
    return status();
  });
  setHandler(resumeUpdate, () => {
    state.paused = false;
    return status();
  });
  setHandler(
    reconfigureUpdate,
    (change) => {
      const valid = reconfigurationSchema.parse(change);
      settings = {
        ...settings,
        ...(valid.batchSize !== undefined && { batchSize: valid.batchSize }),
        ...(valid.maxPolicyLag !== undefined && { maxPolicyLag: valid.maxPolicyLag }),
        ...(valid.stalenessPolicy !== undefined && { stalenessPolicy: valid.stalenessPolicy }),
        loss: { ...settings.loss, ...valid.loss },
        optimizer: { ...settings.optimizer, ...valid.optimizer },
      };
      return status();
    },
    {
      validator: (change) => {
        const result = reconfigurationSchema.safeParse(change);
        if (!result.success) throw new Error(`invalid reconfiguration: ${describeZodError(result.error)}`);
      },
    },
  );

  const isStale = (ref: SampleRef): boolean =>
    state.policyVersion - ref.policyVersion > settings.maxPolicyLag;

  for (;;) {
    await condition(() => !state.paused && state.pending.length >= settings.batchSize);
    if (settings.stalenessPolicy === 'drop') {
      const stale = state.pending.filter(isStale);
      if (stale.length > 0) {
        state.pending = state.pending.filter((ref) => !isStale(ref));
        await bookkeeping.recordStaleExclusions({
          sampleIds: stale.map((ref) => ref.sampleId),
          policyVersion: state.policyVersion,
          maxPolicyLag: settings.maxPolicyLag,
        });
        for (const _ of stale) exclude('stale-policy');
        continue;
      }
    }
    const training = trainerCalls(settings.heartbeatTimeoutMs, settings.trainerTaskQueue);
    const batch = state.pending.slice(0, settings.batchSize);
    const version = state.policyVersion + 1;
    const stepId = `${runId}:v${version}`;
    const { metrics, checkpoint } = await trainAndPublish(
      training,
      {
        runId,
        stepId,
        sampleIds: batch.map((ref) => ref.sampleId),
        method,
        loss: settings.loss,
        optimizer: settings.optimizer,
        // Samples from policies too far behind use their rollout log-probs for the importance ratio.
        useRolloutLogprobs: batch.some(isStale),
        resume: { lastStepId: state.lastStepId, lastCheckpoint: state.lastCheckpoint },
      },
      version,
    );
    const entry: LineageEntry = {
      version,
      stepId,
      sampleIds: batch.map((r) => r.sampleId),
      checkpoint,
      metrics,
    };
    await bookkeeping.recordLineage({ runId, entry });

    state.pending = state.pending.slice(batch.length);
    state.policyVersion = version;
    state.stepsCompleted++;
    state.samplesTrained += batch.length;
    state.lastStepId = stepId;
    state.lastCheckpoint = checkpoint;
    state.lastMetrics = metrics;
    state.lineage = [...state.lineage, entry].slice(-LINEAGE_KEPT);
    stepsThisRun++;

    if (stepsThisRun >= settings.continueAsNewAfterSteps || workflowInfo().continueAsNewSuggested) {
      await allHandlersFinished();
      const recentIds = [...recent].slice(-RECENT_IDS_KEPT);
      await continueAsNew<typeof trainingWorkflow>({
        runId,
        method,
        settings,
        carried: { ...state, recentIds },
      });
    }
  }
}
