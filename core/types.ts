// Plain types shared with workflow code. This file imports nothing, so the workflow bundle stays small and
// deterministic; schemas and the functions that build these values live beside it in core/.

/** The learning method of a training run (spec sections 5, 6 and 7). */
export type Method = 'rl' | 'opd' | 'combine';

/** Main turns are trained; side turns (heartbeats, memory flushes) are served and never trained. */
export type TurnType = 'main' | 'side';

/**
 * What a response the conversation did not continue becomes, when another response to the same request was
 * continued: an exclusion, or a training sample with reward -1 (the user asked for another answer).
 */
export type SupersededPolicy = 'exclude' | 'negative';

/** Which signals a training sample carries: a reward, a teacher, or both (spec section 7 table). */
export type SampleKind = 'rl' | 'opd' | 'opd+rl';

/**
 * A recorded main turn as a later turn refers to it: enough to score it without reading its record. The
 * gateway finds it in the store by the reply the next request kept (docs/gateway.md, "Turn identity").
 */
export interface TurnPointer {
  sampleId: string;
  /** Position in the conversation: 1 + the assistant messages of its request. */
  turn: number;
  policyVersion: number;
  /** Chain hash of the turn's request (messages and tools); turns with the same prefix are siblings. */
  prefixHash: string;
  /** ISO time the gateway recorded it; the reopen horizon is measured from it. */
  recordedAt: string;
}

/** A recorded main turn, as the gateway hands it to its session workflow. Token arrays stay in the store. */
export interface TurnRef {
  sessionId: string;
  /** 1-based position of the main turn within its conversation (1 + the assistant messages it was sent). */
  turn: number;
  /** The id the turn's record and its training sample are stored under (core/sample-id.ts). */
  sampleId: string;
  /** Weight version of the policy that produced the response. */
  policyVersion: number;
  kind: TurnType;
  /** Chain hash of the request's messages and tools. Absent in refs from gateways that numbered turns. */
  prefixHash?: string;
  /** ISO time the gateway recorded the turn. */
  recordedAt?: string;
  /**
   * The turn whose reply this request kept and continues: this request's last message is that turn's next
   * state. Null when it continues none (a first turn, or a reply the gateway never recorded). Absent in refs
   * from gateways that numbered turns; those are paired in turn order.
   */
  continues?: TurnPointer | null;
}

/** Teacher top-K log-probs for top-K distillation (spec 6.6): one row of K per response token. */
export interface TeacherTopK {
  logProbs: number[][];
  tokenIds: number[][];
}

/**
 * One training sample, stored once under `sampleId` (spec 11.2 with exact sampled tokens). Its training fields
 * have the names of the trainer backends' `TrainerSample`, so a stored sample can be handed to them as it is.
 */
export interface TrainingSample {
  sampleId: string;
  sessionId: string;
  turn: number;
  /** Prompt token ids followed by the response token ids the engine sampled. */
  tokens: number[];
  /** The last `responseLength` entries of `tokens` are the response. */
  responseLength: number;
  /** One entry per response token; all ones (excluded turns produce no sample rather than a zero mask). */
  lossMask: number[];
  /** Log-probs the serving engine reported for each sampled response token. */
  rolloutLogProbs: number[];
  /** Temperature the response was sampled at; every log-prob of this sample is computed at it (absent: 1). */
  temperature?: number;
  /** Scalar reward broadcast to every response token: the judge's vote for rl, 0 for opd-only samples. */
  reward: number;
  /** Teacher log-probs of each response token given the hinted prompt (opd, opd+rl, and combine's rl rows). */
  teacherLogProbs?: number[];
  /** Top-K distillation only: the teacher's K best log-probs and their token ids, one row per response token. */
  teacherTopkLogProbs?: number[][];
  teacherTopkIndices?: number[][];
  /**
   * Top-K distillation: the store key of the teacher record holding those rows (`teacher/<sampleId>`), so the
   * [response][K] arrays are stored once; the training step reads them from there.
   */
  teacherTopKKey?: string;
  policyVersion: number;
  method: Method;
  kind: SampleKind;
  /**
   * The prompt's images in prompt order (a vision-language policy's turn), as digests: the bytes are in the
   * store under `imageStoreKey(digest)` (core/image-parts.ts) and are read only when a step is sent.
   */
  images?: SampleImageRef[];
}

/** An image of a sample's prompt: its content digest (`sha256:<hex>`) and media type, no bytes. */
export interface SampleImageRef {
  digest: `sha256:${string}`;
  mediaType: string;
}

/**
 * Why a turn produced no sample. The first group comes from sample assembly (`constrained-sampling`: the reply
 * was drawn under a penalty, bias, grammar or forced tool call training does not replay); `no-next-state`, `superseded`,
 * `judge-failed` and `stale-policy` are for the workflows that settle turns without assembling them
 * (`superseded`: another response to the same request was the one the conversation continued);
 * `trainer-refused` for the samples of a batch the trainer refused (a deterministic refusal: invalid,
 * non-finite, unsupported).
 */
export type SampleExclusionReason =
  | 'empty-response'
  | 'invalid-input'
  | 'constrained-sampling'
  | 'not-judged'
  | 'neutral-score'
  | 'no-hint'
  | 'no-signal'
  | 'no-next-state'
  | 'superseded'
  | 'judge-failed'
  | 'stale-policy'
  | 'trainer-refused';

export interface SampleExclusion {
  sampleId: string;
  reason: SampleExclusionReason;
  /** A sentence for logs and the UI. */
  detail: string;
  /** Set when this is a later scoring of an already scored turn (explicit feedback): see `SampleRef.amends`. */
  amends?: Amendment;
}

/**
 * A turn scored again after its first scoring, because explicit feedback (or the next state after feedback)
 * arrived: the training run replaces the turn's earlier sample with this one if it has not trained yet, and
 * records it against the version it trained into otherwise (docs/scoring.md#feedback).
 */
export interface Amendment {
  /** The turn's sample id (the first scoring's). */
  sampleId: string;
  /** Grows with what the scoring saw (feedback records, the next state): a lower one never replaces a higher. */
  revision: number;
  /** The feedback ids it used. */
  feedbackIds: string[];
}

/** What workflows pass around instead of a sample: small, and enough to batch and report on. */
export interface SampleRef {
  sampleId: string;
  method: Method;
  kind: SampleKind;
  /** Weight version that served the turn: a number, counted again from 0 by each incarnation of a run id. */
  policyVersion: number;
  /**
   * The run incarnation whose weights served the turn, where the run record tells (absent: the base model, or
   * unknown). A training run treats a sample of another incarnation as off-policy (docs/scoring.md).
   */
  servedByIncarnation?: string;
  reward: number;
  responseLength: number;
  /** Set on a later scoring of an already scored turn; `sampleId` is then the amendment's own id. */
  amends?: Amendment;
}

/** The answer of the training workflow's status query. */
export interface TrainingStatus {
  runId: string;
  method: Method;
  /** Weight version currently published to the serving engine. */
  policyVersion: number;
  stepsCompleted: number;
  /** Samples received and waiting for the next batch. */
  pendingSamples: number;
  samplesTrained: number;
  samplesExcluded: number;
  paused: boolean;
  lastStepId: string | null;
}
