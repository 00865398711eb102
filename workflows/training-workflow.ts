// The training loop of one run (`training-<runId>`): collects scored samples, trains a step whenever a batch
// of usable samples is full, publishes the new weights to the serving engine (policy version + 1), records
// which samples made which version, and continues-as-new every few steps, and while it waits once its history
// grows (a run that only receives exclusions, or a paused one). Samples are references; the token arrays stay
// in the sample store, and waiting references beyond a bound are spilled there too, so the carried state stays
// small. A batch the trainer refuses becomes exclusions and the run goes on.

import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { TrainingActivities } from '../activities/training-activities.js';
import { TRAINER_REFUSED } from '../activities/training-errors.js';
import { samplesByTenant } from '../core/tenant.js';
import {
  describeZodError,
  type ResolvedTrainingSettings,
  reconfigurationSchema,
  trainingInputSchema,
} from '../core/training-settings.js';
import type { SampleRef, TrainingStatus } from '../core/types.js';
import { trainAndPublish } from './train-and-publish.js';
import { TrainingQueue } from './training-queue.js';
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
/**
 * The version of this workflow's behaviour that runs started before it replay without: incarnations, the
 * continue-as-new while waiting, the spilled backlog and refusals as exclusions.
 */
const SIGNAL_V2 = 'training-signal-v2';

/**
 * Training steps and publishing: long, heartbeating, retried until they succeed (they are idempotent), so a
 * trainer that restarts or a network that drops costs time, not samples. What the trainer refuses is not
 * retried: it fails at once (`TrainerRefused`) and the batch becomes exclusions.
 */
function trainerCalls(heartbeatTimeoutMs: number, taskQueue: string | undefined) {
  return proxyActivities<TrainingActivities>({
    taskQueue,
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: {
      initialInterval: '2 seconds',
      backoffCoefficient: 2,
      maximumInterval: '1 minute',
      nonRetryableErrorTypes: [TRAINER_REFUSED],
    },
  });
}

// Store writes only: quick, so a short timeout lets a dead worker's attempt be retried soon.
const bookkeeping = proxyActivities<TrainingActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** The refusal's message when `error` is a step the trainer refused (or a sample it could not find). */
function refusalOf(error: unknown): string | null {
  if (!(error instanceof ActivityFailure) || !(error.cause instanceof ApplicationFailure)) return null;
  return error.cause.type === TRAINER_REFUSED ? error.cause.message : null;
}

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
  const v2 = patched(SIGNAL_V2);
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
  const state: TrainingCarry = { ...carried, lineage: [...carried.lineage] };
  const queue = new TrainingQueue(carried);
  const recent = new Set(state.recentIds);
  const beginsIncarnation = v2 && state.incarnation === undefined;
  if (beginsIncarnation) state.incarnation = workflowInfo().firstExecutionRunId;
  const incarnation = state.incarnation;
  let stepsThisRun = 0;

  const status = (): TrainingRunStatus => {
    const base: TrainingStatus = {
      runId,
      method,
      policyVersion: state.policyVersion,
      stepsCompleted: state.stepsCompleted,
      pendingSamples: queue.size,
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
      ...(incarnation !== undefined && { incarnation }),
      backlogSamples: queue.backlogSize,
      lastRefusal: state.lastRefusal ?? null,
    };
  };

  const exclude = (reason: string, count = 1): void => {
    state.samplesExcluded += count;
    state.exclusionsByReason[reason] = (state.exclusionsByReason[reason] ?? 0) + count;
  };

  setHandler(sampleScoredSignal, (delivery: SampleDelivery) => {
    const id = delivery.ok ? delivery.sample.sampleId : delivery.exclusion.sampleId;
    if (recent.has(id)) return;
    recent.add(id);
    if (delivery.ok) queue.push(delivery.sample);
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
        ...(valid.keepCheckpoints !== undefined && { keepCheckpoints: valid.keepCheckpoints }),
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

  // After the handlers: a pause or a sample sent with the start must find them in the first activation.
  if (beginsIncarnation && incarnation !== undefined)
    await bookkeeping.beginIncarnation({ runId, incarnation });

  const isStale = (ref: SampleRef): boolean =>
    state.policyVersion - ref.policyVersion > settings.maxPolicyLag;
  const historyFull = (): boolean =>
    v2 &&
    (workflowInfo().continueAsNewSuggested ||
      workflowInfo().historyLength >= settings.continueAsNewAfterEvents);
  const batchReady = (): boolean => !state.paused && queue.ready(settings.batchSize);

  const continueAsNewNow = async (): Promise<never> => {
    await allHandlersFinished();
    const recentIds = [...recent].slice(-RECENT_IDS_KEPT);
    if (v2 && incarnation !== undefined) await queue.spill(bookkeeping, runId, incarnation);
    return continueAsNew<typeof trainingWorkflow>({
      runId,
      method,
      settings,
      carried: { ...state, ...queue.carry(), recentIds },
    });
  };

  for (;;) {
    // Spilled samples come back from the store before the run waits on a batch that they would fill.
    while (v2 && queue.needsRefill(settings.batchSize)) await queue.refill(bookkeeping);
    await condition(() => batchReady() || historyFull() || (v2 && queue.needsRefill(settings.batchSize)));
    if (!batchReady()) {
      if (historyFull()) await continueAsNewNow();
      continue;
    }
    if (settings.stalenessPolicy === 'drop') {
      const stale = queue.removeWhere(isStale);
      if (stale.length > 0) {
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
    const batch = queue.peek(settings.batchSize);
    const version = state.policyVersion + 1;
    const stepId = incarnation === undefined ? `${runId}:v${version}` : `${runId}:${incarnation}:v${version}`;
    const sampleIds = batch.map((ref) => ref.sampleId);
    let published: { metrics: Record<string, number>; checkpoint: string };
    try {
      published = await trainAndPublish(
        training,
        {
          runId,
          stepId,
          sampleIds,
          method,
          loss: settings.loss,
          optimizer: settings.optimizer,
          // Samples from policies too far behind use their rollout log-probs for the importance ratio.
          useRolloutLogprobs: !v2 && batch.some(isStale),
          ...(v2 && { staleSampleIds: batch.filter(isStale).map((ref) => ref.sampleId) }),
          ...(settings.distillTopK > 0 && { distillTopK: settings.distillTopK }),
          resume: {
            lastStepId: state.lastStepId,
            lastCheckpoint: state.lastCheckpoint,
            // An incarnation's first step trains from the base model, whatever the trainer holds (also
            // when the run continued as new before that step, e.g. while it only received exclusions).
            ...(incarnation !== undefined && state.lastStepId === null && { fromBase: true }),
          },
        },
        version,
        v2 ? { incarnation, keepCheckpoints: settings.keepCheckpoints } : {},
      );
    } catch (error) {
      const refusal = v2 ? refusalOf(error) : null;
      if (refusal === null) throw error;
      // The same batch would be refused again: its samples become exclusions, the version is not used.
      await bookkeeping.recordRefusedBatch({ sampleIds, stepId, detail: refusal });
      queue.take(batch.length);
      exclude('trainer-refused', batch.length);
      state.lastRefusal = { stepId, samples: batch.length, detail: refusal };
      continue;
    }
    const { metrics, checkpoint } = published;
    const entry: LineageEntry = {
      version,
      stepId,
      sampleIds,
      tenants: samplesByTenant(sampleIds),
      checkpoint,
      metrics,
      ...(incarnation !== undefined && { incarnation }),
    };
    await bookkeeping.recordLineage({ runId, entry });

    queue.take(batch.length);
    state.policyVersion = version;
    state.stepsCompleted++;
    state.samplesTrained += batch.length;
    state.lastStepId = stepId;
    state.lastCheckpoint = checkpoint;
    state.lastMetrics = metrics;
    state.lineage = [...state.lineage, entry].slice(-LINEAGE_KEPT);
    stepsThisRun++;

    if (stepsThisRun >= settings.continueAsNewAfterSteps || workflowInfo().continueAsNewSuggested)
      await continueAsNewNow();
    if (historyFull()) await continueAsNewNow();
  }
}
