// One step of a Track 2 training run and the phases agenticTrainingWorkflow runs it through: the carried state,
// the step's phase and rollout progress (what the status query folds), its handlers, and one method per phase.
//
// The order of the commands each phase issues (activities, child workflows, the patch marker, continue-as-new)
// is what recorded histories replay against: move code between phases only when the commands stay in order.
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
import type { AgenticActivities, AssembleResult } from '../activities/agentic-activities.js';
import type { TrainingActivities } from '../activities/training-activities.js';
import type { AgenticTrainingSettings } from '../core/rollout-settings.js';
import { groupsOfSlots } from '../core/step-groups.js';
import { agenticWorkflowId } from '../temporal/workflow-ids.js';
import { agenticStepCalls, trainerCalls } from './activity-options.js';
import {
  type AgenticCarry,
  type AgenticPhase,
  type AgenticStatus,
  type AgenticTrainingWorkflow,
  agenticStatusQuery,
  type BatchProgress,
  batchResultsKey,
  countSlotResults,
  pauseAgenticUpdate,
  type RolloutCounts,
  type RolloutSlot,
  type RolloutTemplate,
  resumeAgenticUpdate,
  rolloutProgressSignal,
  type SlotResult,
  type StepSummary,
} from './agentic-signals.js';
import { agenticStatus } from './agentic-status.js';
import { addCounts, batchSlots, laneWindows, MIN_BATCH_WINDOW, tasksForStep } from './agentic-step-plan.js';
import { rolloutBatchWorkflow } from './rollout-batch-workflow.js';
import { trainAndPublish } from './train-and-publish.js';

const RECENT_STEPS_KEPT = 20;
/** Marks runs whose batches keep their slot results in the store (older histories carry them inline). */
const STEP_RESULTS_PATCH = 'step-results-in-store';
/** Marks runs that start fewer batches at once, each with at least MIN_BATCH_WINDOW rollouts in flight. */
const BATCH_WINDOW_PATCH = 'batch-window-floor';
const MAX_CHILDREN = 1000;

/** The step this execution runs: its tasks, one slot per rollout, and the slots cut into batches. */
export interface PlannedStep {
  step: number;
  stepId: string;
  tasks: string[];
  slots: RolloutSlot[];
  batches: RolloutSlot[][];
}

/** What the step's batches returned. */
export interface StepRollouts {
  /** Whether the batches kept their slot results in the store (false only in runs recorded before). */
  resultsInStore: boolean;
  /** The slot results, when the batches returned them inline. */
  inlineResults: SlotResult[];
  counts: RolloutCounts;
}

export class AgenticRun {
  private phase: AgenticPhase = 'waiting';
  private total = 0;
  private readonly progress = new Map<number, BatchProgress>();
  private readonly bookkeeping: AgenticActivities;
  private readonly trainer: TrainingActivities;
  readonly state: AgenticCarry;

  constructor(
    readonly input: AgenticTrainingSettings,
    carried: AgenticCarry | null,
  ) {
    this.state = carried ?? {
      policyVersion: input.initialPolicyVersion,
      stepsCompleted: 0,
      taskPool: [],
      lastStepId: null,
      lastCheckpoint: null,
      lastMetrics: null,
      recentSteps: [],
      paused: false,
    };
    this.bookkeeping = proxyActivities<AgenticActivities>(agenticStepCalls(input.envTaskQueue));
    this.trainer = proxyActivities<TrainingActivities>(
      trainerCalls(input.training.heartbeatTimeoutMs, input.training.taskQueue, { refusalsFail: false }),
    );
  }

  status(): AgenticStatus {
    const { input, state, phase, total, progress } = this;
    return agenticStatus({ input, state, phase, total, progress });
  }

  registerHandlers(): void {
    setHandler(agenticStatusQuery, () => this.status());
    setHandler(rolloutProgressSignal, (update) => {
      const known = this.progress.get(update.batchIndex);
      if (
        this.phase === 'rollouts' &&
        update.step === this.state.stepsCompleted &&
        (!known || known.done <= update.done)
      )
        this.progress.set(update.batchIndex, update);
    });
    setHandler(pauseAgenticUpdate, () => {
      this.state.paused = true;
      return this.status();
    });
    setHandler(resumeAgenticUpdate, () => {
      this.state.paused = false;
      return this.status();
    });
  }

  /** Resolves the task pool once per run: the given task ids, or the environment's list. */
  async loadTaskPool(): Promise<void> {
    const { input, state } = this;
    if (state.taskPool.length > 0) return;
    state.taskPool =
      input.taskIds ?? (await this.bookkeeping.listEnvTasks({ env: input.env, limit: input.taskSet?.limit }));
    if (state.taskPool.length === 0)
      throw ApplicationFailure.nonRetryable(`environment "${input.env}" lists no tasks`, 'NoTasks');
  }

  allStepsDone(): boolean {
    return this.state.stepsCompleted >= this.input.steps;
  }

  finish(): StepSummary[] {
    this.phase = 'done';
    return this.state.recentSteps;
  }

  async waitWhilePaused(): Promise<void> {
    await condition(() => !this.state.paused);
  }

  planStep(): PlannedStep {
    const { input, state } = this;
    const step = state.stepsCompleted;
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
    this.total = slots.length;
    return { step, stepId: `${input.runId}:step${step}`, tasks, slots, batches };
  }

  /** Runs the step's batches as child workflows, rolloutsInFlight rollouts at a time across them. */
  async runRollouts({ step, batches }: PlannedStep): Promise<StepRollouts> {
    const { input } = this;
    const template = this.rolloutTemplate();
    // Child ids come from the run id (replay-stable); progress goes to whatever id this run was started with.
    const self = workflowInfo().workflowId;
    const childPrefix = agenticWorkflowId(input.runId);
    // Batches keep their slot results in the store and answer with counts (histories recorded before carried
    // every slot result through this workflow).
    const resultsInStore = patched(STEP_RESULTS_PATCH);
    // Histories recorded before started every batch at once, however few rollouts that left each.
    const minWindow = patched(BATCH_WINDOW_PATCH) ? Math.min(MIN_BATCH_WINDOW, input.rolloutsPerBatch) : 1;
    this.phase = 'rollouts';
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
        this.progress.set(batchIndex, {
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
    await Promise.all(laneWindows(input.rolloutsInFlight, batches.length, minWindow).map(lane));
    return { resultsInStore, inlineResults, counts: stepCounts };
  }

  /** Groups the finished rollouts per task, computes advantages and stores the samples (an activity). */
  async assembleSamples(
    { step, stepId, batches }: PlannedStep,
    { resultsInStore, inlineResults }: StepRollouts,
  ): Promise<AssembleResult> {
    const { input } = this;
    this.phase = 'grouping';
    const common = {
      runId: input.runId,
      stepId,
      step,
      advantage: input.advantage,
      judgeCoef: input.stepJudge?.coef ?? null,
    };
    return this.bookkeeping.assembleStepSamples(
      resultsInStore
        ? { ...common, batches: batches.length }
        : { ...common, groups: groupsOfSlots(inlineResults) },
    );
  }

  /**
   * Trains the step's samples with the GRPO loss and publishes the new weights (policy version + 1), when the
   * run trains and the step has samples; the step's metrics, or null when nothing was trained.
   */
  async trainStep(
    { stepId }: PlannedStep,
    assembled: AssembleResult,
  ): Promise<Record<string, number> | null> {
    const { input, state } = this;
    if (!input.training.train || sampleCountOf(assembled) === 0) return null;
    const version = state.policyVersion + 1;
    this.phase = 'training';
    const published = await trainAndPublish(
      this.trainer,
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
    state.lastCheckpoint = published.checkpoint;
    state.policyVersion = version;
    state.lastStepId = stepId;
    state.lastMetrics = published.metrics;
    return published.metrics;
  }

  /** Adds the step's summary to the carried state: the step is complete. */
  recordStep(
    { step, stepId, tasks }: PlannedStep,
    counts: RolloutCounts,
    assembled: AssembleResult,
    metrics: Record<string, number> | null,
  ): void {
    const { state } = this;
    const summary: StepSummary = {
      step,
      stepId,
      rollouts: counts.rollouts,
      byStatus: counts.byStatus,
      retried: counts.retried,
      groups: tasks.length,
      groupsConstant: assembled.groupsConstant,
      groupsFailed: assembled.groupsFailed,
      rolloutsDropped: assembled.rolloutsDropped,
      samplesTrained: metrics === null ? 0 : sampleCountOf(assembled),
      meanReward: assembled.meanReward,
      policyVersion: state.policyVersion,
      metrics,
    };
    state.recentSteps = [...state.recentSteps, summary].slice(-RECENT_STEPS_KEPT);
    state.stepsCompleted++;
  }

  /** One step per execution: continues as new for the next one, or returns the last steps' summaries. */
  async continueAsNewOrFinish(): Promise<StepSummary[]> {
    if (this.state.stepsCompleted < this.input.steps) {
      this.phase = 'waiting';
      await allHandlersFinished();
      await continueAsNew<AgenticTrainingWorkflow>({ ...this.input, carried: this.state });
    }
    return this.finish();
  }

  private rolloutTemplate(): RolloutTemplate {
    const { input } = this;
    return {
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
  }
}

/** The step's sample count (results recorded by older workers name their sample ids only). */
function sampleCountOf(assembled: AssembleResult): number {
  return assembled.sampleIds?.length ?? assembled.sampleCount;
}
