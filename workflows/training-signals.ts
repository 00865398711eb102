// Signals, updates and queries of trainingWorkflow, importable by clients (gateway, CLI, scoring).
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { z } from 'zod';
import type { LossSettings, OptimizerSettings } from '../core/loss-settings.js';
import type {
  ResolvedTrainingSettings,
  reconfigurationSchema,
  trainingSettingsSchema,
} from '../core/training-settings.js';
import type { Method, SampleExclusion, SampleRef, TrainingStatus } from '../core/types.js';
import type { IsolationCarry } from './refusal-isolation.js';

export type SampleDelivery = { ok: true; sample: SampleRef } | { ok: false; exclusion: SampleExclusion };

/** A scored turn: one usable sample or one exclusion. Deliveries of the same sample id count once. */
export const sampleScoredSignal = defineSignal<[SampleDelivery]>('sampleScored');

export const pauseUpdate = defineUpdate<TrainingRunStatus, []>('pause');
export const resumeUpdate = defineUpdate<TrainingRunStatus, []>('resume');
/** Changes batch size, loss or optimizer settings from the next step on; validated before it is accepted. */
export const reconfigureUpdate = defineUpdate<TrainingRunStatus, [TrainingReconfiguration]>('reconfigure');

/**
 * Serves vN's weights again as a new version (docs/evaluation.md#rollback); vN must be in the lineage. Runs with
 * the publish gate's behaviour only. Answers the new lineage entry.
 */
export const rollbackUpdate = defineUpdate<LineageEntry, [{ to: number }]>('rollback');

export const trainingStatusQuery = defineQuery<TrainingRunStatus>('status');
export const lineageQuery = defineQuery<LineageEntry[], [{ version?: number }?]>('lineage');

/** Loss, optimizer and run settings: one zod schema each (core/loss-settings.ts, core/training-settings.ts). */
export type { LossSettings, OptimizerSettings };
export type TrainingSettings = ResolvedTrainingSettings;

/** What `reconfigure` may change (core/training-settings.ts `reconfigurationSchema`): every field optional. */
export type TrainingReconfiguration = z.input<typeof reconfigurationSchema>;

/** Which samples made which policy version. */
export interface LineageEntry {
  version: number;
  stepId: string;
  sampleIds: string[];
  /** Of `sampleIds`, how many each tenant's sessions gave (`-`: Track 2, or sessions from before tenants). */
  tenants?: Record<string, number>;
  /** Group training: per tenant, its waiting samples the cap per tenant kept out of this batch. */
  heldBack?: Record<string, number>;
  /** Group training: the loss weights other than 1 its tenants' samples trained with. */
  weights?: Record<string, number>;
  checkpoint: string;
  metrics: Record<string, number>;
  /** The run's incarnation that published it (absent in entries written before incarnations existed). */
  incarnation?: string;
  /** When the step that made it was recorded (workflow time, ISO 8601; absent in older entries). */
  publishedAt?: string;
  /** The publish gate's verdict (absent: the run has no gate, or the entry is older than it). */
  evaluation?: VersionEvaluation;
  /** A rollback (`train rollback --to vN`): this version serves vN's weights again. */
  rollbackOf?: number;
}

/**
 * The publish gate's verdict on a version (docs/evaluation.md): its score on the run's evaluation set, and the
 * served version's it was compared with. A held version keeps its lineage entry and checkpoint and is not served.
 */
export interface VersionEvaluation {
  /** Mean score of the version's replies over the evaluation set (the scorer's scale). */
  score: number;
  /** The served version's score it was compared with; null when none was recorded (then it is served). */
  baseline: number | null;
  baselineVersion: number | null;
  decision: 'served' | 'held';
  /** Why it was held, in one line (absent when served). */
  reason?: string;
  /** Items scored. */
  items: number;
  /** `judge` or `style:<rule>` (core/reply-scorers.ts). */
  scorer: string;
}

/** Waiting sample references spilled to the store under `key` (core/training-keys.ts). */
export interface BacklogChunk {
  key: string;
  count: number;
}

/** The last batch the trainer refused: its samples became `trainer-refused` exclusions. */
export interface TrainerRefusal {
  stepId: string;
  samples: number;
  detail: string;
}

export interface TrainingCarry {
  policyVersion: number;
  stepsCompleted: number;
  samplesTrained: number;
  samplesExcluded: number;
  exclusionsByReason: Record<string, number>;
  /** The oldest waiting samples, in arrival order (at most a bound's worth is carried; the rest is backlog). */
  pending: SampleRef[];
  /** Sample ids seen lately (pending, trained or excluded): a late duplicate delivery is ignored. */
  recentIds: string[];
  lastStepId: string | null;
  lastCheckpoint: string | null;
  lastMetrics: Record<string, number> | null;
  lineage: LineageEntry[];
  paused: boolean;
  /**
   * This run id's incarnation: the first run id of its chain of executions. Step ids and checkpoint folders
   * carry it, so a run started again under the same id never meets another incarnation's steps or weights.
   */
  incarnation?: string;
  /** Chunks of waiting samples spilled to the store, oldest first (they come after `pending`). */
  backlog?: BacklogChunk[];
  /** Samples received while there was a backlog (they come after it). */
  tail?: SampleRef[];
  /** Spilled chunks written so far: the next one's number. */
  backlogSeq?: number;
  /** Backlog chunks already read back, deleted at the next continue-as-new. */
  consumedBacklog?: string[];
  backlogSamples?: number;
  lastRefusal?: TrainerRefusal | null;
  /** A refused batch being split to find the samples that cause the refusal (absent or null: none). */
  isolation?: IsolationCarry | null;
  /** Later scorings of turns (explicit feedback) and what became of them (`FeedbackAmendments`). */
  amendments?: AmendmentsCarry;
  /**
   * The version the engine serves (absent: `policyVersion`). With the publish gate, `lastStepId` and
   * `lastCheckpoint` are the served version's, and `policyVersion` the newest trained (maybe held) one.
   */
  servedVersion?: number;
  /** The trainer holds a held version: the next step loads the served one first. */
  reloadServed?: boolean;
  /** Versions the publish gate held, newest first (bounded). */
  held?: HeldVersion[];
}

/** A version the publish gate held: trained and kept, not served. */
export interface HeldVersion {
  version: number;
  score: number;
  baseline: number | null;
  reason: string;
}

/** What a run keeps of later scorings of turns (bounded; docs/scoring.md#feedback). */
export interface AmendmentsCarry {
  /** Per turn: the scoring that stands (its sample id) and its revision. */
  accepted: { sampleId: string; acceptedId: string; revision: number }[];
  /** Sample ids a later scoring replaced: never trained, also when they come back from the backlog. */
  replaced: string[];
  /** Scorings that came after the turn had trained, with the version it trained into. */
  afterTraining: FeedbackAfterTraining[];
  applied: number;
}

/** A later scoring of a turn that had already trained: kept against the version it trained into. */
export interface FeedbackAfterTraining {
  sampleId: string;
  /** The later scoring's own id (its sample or exclusion is in the store under it). */
  amendmentId: string;
  version: number;
  feedbackIds: string[];
}

/** The start input: one JSON object, pasteable into the Temporal UI's Start Workflow form. */
export interface TrainingInput {
  runId: string;
  /** Absent: `combine`, as in the configuration's default. */
  method?: Method;
  /** Anything left out takes its default (docs/configuration.md). */
  settings?: Partial<Omit<z.input<typeof trainingSettingsSchema>, 'loss' | 'optimizer'>> & {
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
  /** The run id's incarnation (absent for runs started before incarnations existed). */
  incarnation?: string;
  /** Of `pendingSamples`, those spilled to the store (the history carries at most a bound's worth). */
  backlogSamples?: number;
  lastRefusal?: TrainerRefusal | null;
  /** Explicit feedback: later scorings applied before training, and those that came after (latest last). */
  feedback?: { amended: number; afterTraining: FeedbackAfterTraining[] };
  /** The version the engine serves (below `policyVersion` when the publish gate held the newest). */
  servedVersion?: number;
  /** Versions the publish gate held, newest first (a bounded list). */
  held?: HeldVersion[];
}

/** trainingWorkflow's signature: what `temporal/workflow-starts.ts` starts it with (workflows/index.ts checks it). */
export type TrainingWorkflow = (input: TrainingInput) => Promise<void>;
