// Inputs, results, signals, queries and updates of the Track 2 workflows (envRolloutWorkflow,
// rolloutBatchWorkflow, agenticTrainingWorkflow), importable by clients (CLI, tests) and activities.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { z } from 'zod';
import type { agenticTrainingInputSchema, envRolloutInputSchema } from '../core/rollout-settings.js';

/**
 * COMPLETED: the policy gave a final answer (or the environment said the episode is over);
 * TRUNCATED: max turns reached, or the last answer was cut off at the token limit (both are evaluated);
 * FAILED: too many parse errors, or an environment/engine failure (not trained);
 * ABORTED: cancelled (not trained). The sandbox is released in every case.
 */
export type RolloutStatus = 'COMPLETED' | 'TRUNCATED' | 'FAILED' | 'ABORTED';

/** One rollout's start input: one JSON object (the Temporal UI's Start Workflow form sends one). */
export type EnvRolloutInput = z.input<typeof envRolloutInputSchema>;

export interface EnvRolloutResult {
  rolloutId: string;
  status: RolloutStatus;
  /** The evaluated outcome reward; null when the rollout was not evaluated (FAILED, ABORTED). */
  reward: number | null;
  /** Policy steps taken: one sample each, `<rolloutId>:<step>`. */
  steps: number;
  sampleIds: string[];
  /** Every container the rollout ran in (more than one when a host lost it and it was re-created). */
  containerIds: string[];
  /** The env hosts that held it. */
  hostIds: string[];
  parseErrors: number;
  /** Why it ended, in a sentence. */
  detail: string;
  /** Per-step judge scores (+1, 0, -1) when a step judge was configured, else null. */
  stepScores: number[] | null;
}

/** One rollout position in a training step: sample `sample` of group (task) `group`. */
export interface RolloutSlot {
  group: number;
  sample: number;
  taskId: string;
}

/** What every rollout of a step shares: everything of EnvRolloutInput but the rollout id and the task. */
export type RolloutTemplate = Omit<EnvRolloutInput, 'rolloutId' | 'taskId'>;

export type RolloutsAs = 'workflows' | 'activities';

export interface RolloutBatchInput {
  /** Rollout ids are `<idPrefix>-g<group>-n<sample>-a<attempt>`. */
  idPrefix: string;
  batchIndex: number;
  /** The training step the batch belongs to (progress signals carry it). */
  step: number;
  slots: RolloutSlot[];
  /** Rollouts of this batch running at once. */
  window: number;
  maxRetriesPerRollout: number;
  rolloutTimeoutMs: number;
  template: RolloutTemplate;
  /** Workflow to send progress signals to (the training run), if any. */
  reportTo?: string;
  /**
   * Each rollout as its own child workflow (`rollout-<id>`, absent: batches started before) or as its episode
   * activities inside this batch.
   */
  rolloutsAs?: RolloutsAs;
  /**
   * Where the batch stores its slot results (an activity on the env queue), returning only a summary, so no
   * payload grows with the batch. Absent (batches started before): the results come back in the result.
   */
  resultsKey?: string;
}

export interface SlotResult {
  group: number;
  sample: number;
  taskId: string;
  /** The last attempt's rollout id. */
  rolloutId: string;
  attempts: number;
  status: RolloutStatus;
  reward: number | null;
  steps: number;
  stepScores: number[] | null;
  containerIds: string[];
}

/** Counts over a batch's slots (or a step's): what the training run's status and summary need. */
export interface RolloutCounts {
  rollouts: number;
  byStatus: Record<RolloutStatus, number>;
  /** Rollouts run again after a failure. */
  retried: number;
  rewardSum: number;
  rewardCount: number;
}

export interface RolloutBatchResult {
  batchIndex: number;
  /** Every slot's result: batches started without a `resultsKey`. */
  results?: SlotResult[];
  /** With a `resultsKey`: the results are in the store there, and these are their counts. */
  resultsKey?: string;
  counts?: RolloutCounts;
}

/** The record a batch leaves at its `resultsKey`. */
export interface BatchResultsRecord {
  batchIndex: number;
  results: SlotResult[];
}

export function countSlotResults(results: readonly SlotResult[]): RolloutCounts {
  const byStatus: Record<RolloutStatus, number> = { COMPLETED: 0, TRUNCATED: 0, FAILED: 0, ABORTED: 0 };
  let retried = 0;
  let rewardSum = 0;
  let rewardCount = 0;
  for (const r of results) {
    byStatus[r.status]++;
    retried += r.attempts - 1;
    if (r.reward !== null) {
      rewardSum += r.reward;
      rewardCount++;
    }
  }
  return { rollouts: results.length, byStatus, retried, rewardSum, rewardCount };
}

export interface BatchProgress {
  step: number;
  batchIndex: number;
  total: number;
  done: number;
  failed: number;
  inFlight: number;
  retried: number;
  rewardSum: number;
  rewardCount: number;
}

/** A batch's progress, sent to the training run every few rollouts (at most ~10 signals per batch). */
export const rolloutProgressSignal = defineSignal<[BatchProgress]>('rolloutProgress');
export const batchStatusQuery = defineQuery<BatchProgress>('batchStatus');

export type AgenticTrainingInput = z.input<typeof agenticTrainingInputSchema> & { carried?: AgenticCarry };

export interface StepSummary {
  step: number;
  stepId: string;
  rollouts: number;
  byStatus: Record<RolloutStatus, number>;
  /** Rollouts run again after a failure. */
  retried: number;
  groups: number;
  /** Groups whose rewards were all equal (GRPO gives them nothing to learn). */
  groupsConstant: number;
  /** Groups none of whose rollouts could be trained (each failed or was aborted). */
  groupsFailed: number;
  /**
   * Rollouts left out of their group because they failed or were aborted (their group trains on the others).
   * Absent in summaries of steps run before failed rollouts were dropped one by one.
   */
  rolloutsDropped?: number;
  samplesTrained: number;
  meanReward: number | null;
  /** The version published after this step; unchanged when nothing was trained. */
  policyVersion: number;
  metrics: Record<string, number> | null;
}

export interface AgenticCarry {
  policyVersion: number;
  stepsCompleted: number;
  /** Resolved once from taskIds or the environment's list. */
  taskPool: string[];
  lastStepId: string | null;
  lastCheckpoint: string | null;
  lastMetrics: Record<string, number> | null;
  recentSteps: StepSummary[];
  paused: boolean;
}

export type AgenticPhase =
  | 'waiting'
  | 'paused'
  | 'rollouts'
  | 'grouping'
  | 'training'
  | 'publishing'
  | 'done';

export interface AgenticStatus {
  runId: string;
  env: string;
  phase: AgenticPhase;
  /** The step in progress (0-based) and the number of steps the run was asked for. */
  step: number;
  steps: number;
  stepsCompleted: number;
  policyVersion: number;
  paused: boolean;
  rollouts: { total: number; done: number; failed: number; inFlight: number; retried: number };
  /** Mean reward of the step's evaluated rollouts so far. */
  meanReward: number | null;
  lastStep: StepSummary | null;
  lastMetrics: Record<string, number> | null;
}

export const agenticStatusQuery = defineQuery<AgenticStatus>('status');
/** Stops starting new steps (the step in progress finishes); resume lets the next one start. */
export const pauseAgenticUpdate = defineUpdate<AgenticStatus, []>('pause');
export const resumeAgenticUpdate = defineUpdate<AgenticStatus, []>('resume');

/** A sample-store key from its parts (each encoded, as store/sample-store.ts `storeKey` does). */
function trainingRunKey(...parts: (string | number)[]): string {
  return ['agentic', ...parts].map((part) => encodeURIComponent(String(part))).join('/');
}

/** The manifest of a training step: its groups, advantages and trained sample ids. */
export function agenticStepKey(runId: string, step: number): string {
  return trainingRunKey(runId, 'steps', step);
}

/** Where batch `batchIndex` of a training step keeps its slot results. */
export function batchResultsKey(runId: string, step: number, batchIndex: number): string {
  return trainingRunKey(runId, 'batches', step, batchIndex);
}

/** Where an episode's loop is: read from its activity's heartbeat by the rollout progress bar. */
export interface EpisodeProgress {
  turns: number;
  phase: 'policyStep' | 'envStep' | 'evaluate' | 'judge';
}

/** The Track 2 workflows' signatures: what `temporal/workflow-starts.ts` starts them with (workflows/index.ts checks them). */
export type AgenticTrainingWorkflow = (input: AgenticTrainingInput) => Promise<StepSummary[]>;
export type EnvRolloutWorkflow = (input: EnvRolloutInput) => Promise<EnvRolloutResult>;
export type RolloutBatchWorkflow = (input: RolloutBatchInput) => Promise<RolloutBatchResult>;
