// The Track 2 training loop (`agentic-<runId>`), one training step per run: pick the step's tasks, fan out
// samplesPerTask rollouts per task as a tree (this workflow → rolloutBatchWorkflow children of ≤1,000
// rollouts each → envRolloutWorkflow children) under a sliding window of rolloutsInFlight, group the
// finished rollouts per task, compute advantages and store the samples (an activity), train them with the
// Track 1 trainStep (GRPO loss) and publish the new weights (policy version + 1), then continue-as-new.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  executeChild,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgenticActivities } from '../activities/agentic-activities.js';
import type { TrainingActivities } from '../activities/training-activities.js';
import { agenticTrainingInputSchema } from '../core/rollout-settings.js';
import { groupsOfSlots } from '../core/step-groups.js';
import { describeZodError } from '../core/training-settings.js';
import { agenticWorkflowId } from '../temporal/workflow-ids.js';
import {
  type AgenticCarry,
  type AgenticPhase,
  type AgenticStatus,
  type AgenticTrainingInput,
  agenticStatusQuery,
  type BatchProgress,
  batchResultsKey,
  countSlotResults,
  pauseAgenticUpdate,
  type RolloutCounts,
  type RolloutSlot,
  type RolloutStatus,
  type RolloutTemplate,
  resumeAgenticUpdate,
  rolloutProgressSignal,
  type SlotResult,
  type StepSummary,
} from './agentic-signals.js';
import { rolloutBatchWorkflow } from './rollout-batch-workflow.js';
import { trainAndPublish } from './train-and-publish.js';

const RECENT_STEPS_KEPT = 20;
/** Marks runs whose batches keep their slot results in the store (older histories carry them inline). */
export const STEP_RESULTS_PATCH = 'step-results-in-store';
const MAX_CHILDREN = 1000;

/** The step's tasks: `perStep` of the pool, taken in turn (step k starts where step k−1 stopped). */
export function tasksForStep(pool: readonly string[], step: number, perStep: number | undefined): string[] {
  const count = Math.min(perStep ?? pool.length, pool.length);
  const start = (step * count) % pool.length;
  return Array.from({ length: count }, (_, i) => pool[(start + i) % pool.length] as string);
}

/** Splits groups into batches of at most `perBatch` rollouts; a group never spans two batches. */
export function batchSlots(slots: readonly RolloutSlot[], perBatch: number): RolloutSlot[][] {
  const batches: RolloutSlot[][] = [];
  let current: RolloutSlot[] = [];
  let group: RolloutSlot[] = [];
  const flushGroup = () => {
    if (current.length + group.length > perBatch && current.length > 0) {
      batches.push(current);
      current = [];
    }
    current.push(...group);
    group = [];
  };
  for (const slot of slots) {
    if (group.length > 0 && group[0]?.group !== slot.group) flushGroup();
    group.push(slot);
  }
  if (group.length > 0) flushGroup();
  if (current.length > 0) batches.push(current);
  return batches;
}

function addCounts(total: RolloutCounts, counts: RolloutCounts): void {
  total.rollouts += counts.rollouts;
  for (const status of Object.keys(counts.byStatus) as RolloutStatus[])
    total.byStatus[status] += counts.byStatus[status];
  total.retried += counts.retried;
  total.rewardSum += counts.rewardSum;
  total.rewardCount += counts.rewardCount;
}

/** Sliding windows of the batches that run at once: rolloutsInFlight split as evenly as it goes. */
export function laneWindows(totalWindow: number, batches: number): number[] {
  const lanes = Math.max(1, Math.min(batches, totalWindow));
  return Array.from(
    { length: lanes },
    (_, i) => Math.floor(totalWindow / lanes) + (i < totalWindow % lanes ? 1 : 0),
  );
}

export async function agenticTrainingWorkflow(rawInput: AgenticTrainingInput): Promise<StepSummary[]> {
  const parsed = agenticTrainingInputSchema.safeParse(rawInput);
  if (!parsed.success)
    throw ApplicationFailure.nonRetryable(
      `invalid agentic training input: ${describeZodError(parsed.error)}`,
      'InvalidInput',
    );
  const input = parsed.data;
  const carried = (rawInput.carried ?? null) as AgenticCarry | null;
  const state: AgenticCarry = carried ?? {
    policyVersion: input.initialPolicyVersion,
    stepsCompleted: 0,
    taskPool: [],
    lastStepId: null,
    lastCheckpoint: null,
    lastMetrics: null,
    recentSteps: [],
    paused: false,
  };
  let phase: AgenticPhase = 'waiting';
  let total = 0;
  const progress = new Map<number, BatchProgress>();

  const status = (): AgenticStatus => {
    let done = 0;
    let failed = 0;
    let inFlight = 0;
    let retried = 0;
    let rewardSum = 0;
    let rewardCount = 0;
    for (const p of progress.values()) {
      done += p.done;
      failed += p.failed;
      inFlight += p.inFlight;
      retried += p.retried;
      rewardSum += p.rewardSum;
      rewardCount += p.rewardCount;
    }
    return {
      runId: input.runId,
      env: input.env,
      phase: state.paused && phase === 'waiting' ? 'paused' : phase,
      step: state.stepsCompleted,
      steps: input.steps,
      stepsCompleted: state.stepsCompleted,
      policyVersion: state.policyVersion,
      paused: state.paused,
      rollouts: { total, done, failed, inFlight, retried },
      meanReward: rewardCount > 0 ? rewardSum / rewardCount : null,
      lastStep: state.recentSteps.at(-1) ?? null,
      lastMetrics: state.lastMetrics,
    };
  };
  setHandler(agenticStatusQuery, status);
  setHandler(rolloutProgressSignal, (update) => {
    const known = progress.get(update.batchIndex);
    if (phase === 'rollouts' && update.step === state.stepsCompleted && (!known || known.done <= update.done))
      progress.set(update.batchIndex, update);
  });
  setHandler(pauseAgenticUpdate, () => {
    state.paused = true;
    return status();
  });
  setHandler(resumeAgenticUpdate, () => {
    state.paused = false;
    return status();
  });

  const bookkeeping = proxyActivities<AgenticActivities>({
    taskQueue: input.envTaskQueue,
    startToCloseTimeout: '30 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  });
  const trainer = proxyActivities<TrainingActivities>({
    taskQueue: input.training.taskQueue,
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: input.training.heartbeatTimeoutMs,
    retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });

  if (state.taskPool.length === 0) {
    state.taskPool =
      input.taskIds ?? (await bookkeeping.listEnvTasks({ env: input.env, limit: input.taskSet?.limit }));
    if (state.taskPool.length === 0)
      throw ApplicationFailure.nonRetryable(`environment "${input.env}" lists no tasks`, 'NoTasks');
  }
  if (state.stepsCompleted >= input.steps) {
    phase = 'done';
    return state.recentSteps;
  }

  await condition(() => !state.paused);
  const step = state.stepsCompleted;
  const stepId = `${input.runId}:step${step}`;
  const tasks = tasksForStep(state.taskPool, step, input.tasksPerStep);
  const slots: RolloutSlot[] = tasks.flatMap((taskId, group) =>
    Array.from({ length: input.samplesPerTask }, (_, sample) => ({ group, sample, taskId })),
  );
  const batches = batchSlots(slots, input.rolloutsPerBatch);
  if (batches.length > MAX_CHILDREN)
    throw ApplicationFailure.nonRetryable(
      `${slots.length} rollouts need ${batches.length} batches; at most ${MAX_CHILDREN} (raise rolloutsPerBatch or lower tasksPerStep)`,
      'InvalidInput',
    );
  total = slots.length;

  const template: RolloutTemplate = {
    env: input.env,
    policy: input.policy,
    maxTurns: input.maxTurns,
    maxParseErrors: input.maxParseErrors,
    contextBudgetTokens: input.contextBudgetTokens,
    leaseMs: input.leaseMs,
    envTaskQueue: input.envTaskQueue,
    hostTimeoutMs: input.hostTimeoutMs,
    heartbeatTimeoutMs: input.heartbeatTimeoutMs,
    ...(input.stepJudge && { stepJudge: input.stepJudge }),
  };
  // Child ids come from the run id (replay-stable); progress goes to whatever id this run was started with.
  const self = workflowInfo().workflowId;
  const childPrefix = agenticWorkflowId(input.runId);
  // Batches keep their slot results in the store and answer with counts (histories recorded before carried
  // every slot result through this workflow).
  const resultsInStore = patched(STEP_RESULTS_PATCH);
  phase = 'rollouts';
  const inlineResults: SlotResult[] = [];
  const stepCounts = countSlotResults([]);
  let nextBatch = 0;
  const lane = async (window: number): Promise<void> => {
    while (nextBatch < batches.length) {
      const batchIndex = nextBatch++;
      const batch = await executeChild(rolloutBatchWorkflow, {
        workflowId: `${childPrefix}-s${step}-b${batchIndex}`,
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        args: [
          {
            idPrefix: `${input.runId}-s${step}`,
            batchIndex,
            step,
            slots: batches[batchIndex] ?? [],
            window,
            maxRetriesPerRollout: input.maxRetriesPerRollout,
            rolloutTimeoutMs: input.rolloutTimeoutMs,
            rolloutsAs: input.rolloutsAs,
            template,
            reportTo: self,
            ...(resultsInStore && { resultsKey: batchResultsKey(input.runId, step, batchIndex) }),
          },
        ],
      });
      if (batch.results) inlineResults.push(...batch.results);
      const counts = batch.counts ?? countSlotResults(batch.results ?? []);
      addCounts(stepCounts, counts);
      progress.set(batchIndex, {
        step,
        batchIndex,
        total: counts.rollouts,
        done: counts.rollouts,
        failed: counts.byStatus.FAILED + counts.byStatus.ABORTED,
        inFlight: 0,
        retried: counts.retried,
        rewardSum: counts.rewardSum,
        rewardCount: counts.rewardCount,
      });
    }
  };
  await Promise.all(laneWindows(input.rolloutsInFlight, batches.length).map(lane));

  phase = 'grouping';
  const common = {
    runId: input.runId,
    stepId,
    step,
    advantage: input.advantage,
    judgeCoef: input.stepJudge?.coef ?? null,
  };
  const assembled = await bookkeeping.assembleStepSamples(
    resultsInStore
      ? { ...common, batches: batches.length }
      : { ...common, groups: groupsOfSlots(inlineResults) },
  );

  // Results recorded by older workers name their sample ids only.
  const sampleCount = assembled.sampleIds?.length ?? assembled.sampleCount;
  let metrics: Record<string, number> | null = null;
  if (input.training.train && sampleCount > 0) {
    const version = state.policyVersion + 1;
    phase = 'training';
    const published = await trainAndPublish(
      trainer,
      {
        runId: input.runId,
        stepId,
        // The ids stay in the step manifest; only older runs pass them inline.
        sampleIds: assembled.sampleIds ?? [],
        ...(assembled.sampleIds === undefined && { sampleIdsKey: assembled.manifestKey }),
        method: 'rl',
        loss: input.training.loss,
        optimizer: input.training.optimizer,
        useRolloutLogprobs: false,
        resume: { lastStepId: state.lastStepId, lastCheckpoint: state.lastCheckpoint },
      },
      version,
    );
    metrics = published.metrics;
    state.lastCheckpoint = published.checkpoint;
    state.policyVersion = version;
    state.lastStepId = stepId;
    state.lastMetrics = metrics;
  }

  const summary: StepSummary = {
    step,
    stepId,
    rollouts: stepCounts.rollouts,
    byStatus: stepCounts.byStatus,
    retried: stepCounts.retried,
    groups: tasks.length,
    groupsConstant: assembled.groupsConstant,
    groupsFailed: assembled.groupsFailed,
    rolloutsDropped: assembled.rolloutsDropped,
    samplesTrained: metrics === null ? 0 : sampleCount,
    meanReward: assembled.meanReward,
    policyVersion: state.policyVersion,
    metrics,
  };
  state.recentSteps = [...state.recentSteps, summary].slice(-RECENT_STEPS_KEPT);
  state.stepsCompleted++;

  if (state.stepsCompleted < input.steps) {
    phase = 'waiting';
    await allHandlersFinished();
    await continueAsNew<typeof agenticTrainingWorkflow>({ ...input, carried: state });
  }
  phase = 'done';
  return state.recentSteps;
}
