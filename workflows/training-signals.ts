// Signals, updates and queries of trainingWorkflow, importable by clients (gateway, CLI, scoring).
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Method, SampleExclusion, SampleRef, TrainingStatus } from '../core/types.js';

export type SampleDelivery = { ok: true; sample: SampleRef } | { ok: false; exclusion: SampleExclusion };

/** A scored turn: one usable sample or one exclusion. Deliveries of the same sample id count once. */
export const sampleScoredSignal = defineSignal<[SampleDelivery]>('sampleScored');

export const pauseUpdate = defineUpdate<TrainingRunStatus, []>('pause');
export const resumeUpdate = defineUpdate<TrainingRunStatus, []>('resume');
/** Changes batch size, loss or optimizer settings from the next step on; validated before it is accepted. */
export const reconfigureUpdate = defineUpdate<TrainingRunStatus, [TrainingReconfiguration]>('reconfigure');

export const trainingStatusQuery = defineQuery<TrainingRunStatus>('status');
export const lineageQuery = defineQuery<LineageEntry[], [{ version?: number }?]>('lineage');

export interface LossSettings {
  epsClip: number;
  epsClipHigh: number;
  klCoef: number;
  klType: 'low_var_kl' | 'k1' | 'k2' | 'k3';
  entropyCoef: number;
  wRl: number;
  wOpd: number;
}

export interface OptimizerSettings {
  learningRate: number;
  weightDecay: number;
  betas: [number, number];
}

export interface TrainingSettings {
  batchSize: number;
  maxPolicyLag: number;
  stalenessPolicy: 'drop' | 'rollout-logprobs';
  continueAsNewAfterSteps: number;
  /** A trainer activity silent this long is presumed dead and retried. */
  heartbeatTimeoutMs: number;
  /** Task queue of trainStep and publishWeights (a trainer worker on the GPU host); absent: this run's queue. */
  trainerTaskQueue?: string;
  loss: LossSettings;
  optimizer: OptimizerSettings;
}

export interface TrainingReconfiguration {
  batchSize?: number;
  maxPolicyLag?: number;
  stalenessPolicy?: 'drop' | 'rollout-logprobs';
  loss?: Partial<LossSettings>;
  optimizer?: Partial<OptimizerSettings>;
}

/** Which samples made which policy version. */
export interface LineageEntry {
  version: number;
  stepId: string;
  sampleIds: string[];
  checkpoint: string;
  metrics: Record<string, number>;
}

export interface TrainingCarry {
  policyVersion: number;
  stepsCompleted: number;
  samplesTrained: number;
  samplesExcluded: number;
  exclusionsByReason: Record<string, number>;
  pending: SampleRef[];
  /** Sample ids seen lately (pending, trained or excluded): a late duplicate delivery is ignored. */
  recentIds: string[];
  lastStepId: string | null;
  lastCheckpoint: string | null;
  lastMetrics: Record<string, number> | null;
  lineage: LineageEntry[];
  paused: boolean;
}

/** The start input: one JSON object, pasteable into the Temporal UI's Start Workflow form. */
export interface TrainingInput {
  runId: string;
  method: Method;
  /** Anything left out takes its default (docs/configuration.md). */
  settings?: Partial<Omit<TrainingSettings, 'loss' | 'optimizer'>> & {
    loss?: Partial<LossSettings>;
    optimizer?: Partial<OptimizerSettings>;
  };
  /** Policy version the serving engine runs when the run starts (0 for a base model). */
  initialPolicyVersion?: number;
  carried?: TrainingCarry;
}

export interface TrainingRunStatus extends TrainingStatus {
  exclusionsByReason: Record<string, number>;
  lastMetrics: Record<string, number> | null;
  lastCheckpoint: string | null;
  settings: TrainingSettings;
}

export function trainingWorkflowId(runId: string): string {
  return `training-${runId}`;
}
