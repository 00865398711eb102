// The state of one training run's execution and the phases trainingWorkflow runs it through: what it carries
// over continue-as-new (counts, lineage, the waiting samples), its handlers, and one method per phase of the
// loop. The loop itself is in training-workflow.ts; runs started before incarnations replay theirs from
// training-before-incarnations.ts with the same state and the phases it shares.
//
// The order of the commands each phase issues (activities, conditions, continue-as-new) is what recorded
// histories replay against: move code between phases only when the commands stay in the same order.

import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { z } from 'zod';
import type { TrainingActivities, TrainStepInput } from '../activities/training-activities.js';
import { type RefusedSamples, TRAINER_REFUSED } from '../activities/training-errors.js';
import { samplesByTenant } from '../core/tenant.js';
import { formCappedBatch, weightsUsed } from '../core/tenant-caps.js';
import {
  describeZodError,
  type ResolvedTrainingSettings,
  reconfigurationSchema,
  type trainingInputSchema,
} from '../core/training-settings.js';
import type { Amendment, Method, SampleRef, TrainingStatus } from '../core/types.js';
import { trainerCalls, trainingStoreWrites } from './activity-options.js';
import { FeedbackAmendments, trainedVersionIn } from './feedback-amendments.js';
import { RefusalIsolation } from './refusal-isolation.js';
import { type StepOutcome, trainAndPublish } from './train-and-publish.js';
import { TrainingQueue } from './training-queue.js';
import {
  type LineageEntry,
  lineageQuery,
  pauseUpdate,
  reconfigureUpdate,
  resumeUpdate,
  rollbackUpdate,
  type SampleDelivery,
  sampleScoredSignal,
  type TrainingCarry,
  type TrainingReconfiguration,
  type TrainingRunStatus,
  type TrainingWorkflow,
  trainingStatusQuery,
} from './training-signals.js';

const RECENT_IDS_KEPT = 5_000;
const LINEAGE_KEPT = 100;
const HELD_KEPT = 20;

export type ParsedTrainingInput = z.output<typeof trainingInputSchema>;

/** The batch the next step trains, and the version and step id it will publish under. */
export interface PlannedStep {
  batch: SampleRef[];
  sampleIds: string[];
  version: number;
  stepId: string;
  /** Per tenant, the waiting samples the cap per tenant kept out of this batch (group training). */
  heldBack?: Record<string, number>;
}

export type PublishedStep = StepOutcome;

const bookkeeping = proxyActivities<TrainingActivities>(trainingStoreWrites);

/** What changed after this workflow's first version; each is on where `patched()` says so. */
export interface TrainingBehaviour {
  /** The run has incarnations (false only in runs started before they existed). */
  incarnations: boolean;
  /** Samples of another incarnation, or of a version above the run's own, are off-policy. */
  offPolicyIncarnations?: boolean;
  /** A refused batch is split, so only the samples that cause the refusal become exclusions. */
  isolateRefusals?: boolean;
  /** Later scorings of a turn (explicit feedback) replace its sample before it trains. */
  amendments?: boolean;
  /** Group training: a batch holds at most `maxSamplesPerTenant` of one tenant; tenants' samples are weighted. */
  tenantCaps?: boolean;
  /**
   * The publish gate (when the settings have one) and rollback; lineage entries carry `publishedAt`; staleness
   * is counted from the served version.
   */
  publishGate?: boolean;
}

interface Refusal {
  message: string;
  /** The samples the trainer named as the cause, if it did. */
  sampleIds: string[];
}

/** The refusal when `error` is a step the trainer refused (or a sample it could not find). */
function refusalOf(error: unknown): Refusal | null {
  if (!(error instanceof ActivityFailure) || !(error.cause instanceof ApplicationFailure)) return null;
  if (error.cause.type !== TRAINER_REFUSED) return null;
  const named = (error.cause.details?.[0] as Partial<RefusedSamples> | undefined)?.refusedSampleIds;
  const sampleIds = Array.isArray(named) ? named.filter((id) => typeof id === 'string') : [];
  return { message: error.cause.message, sampleIds };
}

export class TrainingRun {
  readonly runId: string;
  readonly method: Method;
  settings: ResolvedTrainingSettings;
  readonly state: TrainingCarry;
  readonly queue: TrainingQueue;
  /** The run id's incarnation; undefined only in runs started before incarnations existed. */
  readonly incarnation: string | undefined;
  private readonly recent: Set<string>;
  private readonly beginsIncarnation: boolean;
  private readonly behaviour: TrainingBehaviour;
  private readonly isolation: RefusalIsolation;
  private readonly amendments: FeedbackAmendments;
  /** The step being trained now: a later scoring of one of its samples is kept against its version. */
  private inFlight: PlannedStep | null = null;
  /** A rollback is under way: no step starts until it is done. */
  private rollingBack = false;
  private stepsThisRun = 0;

  constructor(
    input: ParsedTrainingInput,
    carriedIn: TrainingCarry | undefined,
    behaviour: TrainingBehaviour,
  ) {
    const { incarnations } = behaviour;
    this.behaviour = behaviour;
    this.runId = input.runId;
    this.method = input.method;
    this.settings = input.settings;
    const carried: TrainingCarry = carriedIn ?? {
      policyVersion: input.initialPolicyVersion,
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
    this.state = { ...carried, lineage: [...carried.lineage] };
    this.queue = new TrainingQueue(carried);
    this.isolation = new RefusalIsolation(carried.isolation);
    this.amendments = new FeedbackAmendments(carried.amendments);
    this.recent = new Set(this.state.recentIds);
    this.beginsIncarnation = incarnations && this.state.incarnation === undefined;
    if (this.beginsIncarnation) this.state.incarnation = workflowInfo().firstExecutionRunId;
    this.incarnation = this.state.incarnation;
  }

  status(): TrainingRunStatus {
    const { state, queue, incarnation } = this;
    const base: TrainingStatus = {
      runId: this.runId,
      method: this.method,
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
      settings: this.settings,
      ...(incarnation !== undefined && { incarnation }),
      backlogSamples: queue.backlogSize,
      lastRefusal: state.lastRefusal ?? null,
      ...(this.behaviour.amendments && { feedback: this.amendments.status() }),
      ...(this.behaviour.publishGate && {
        servedVersion: this.servedVersion(),
        held: [...(state.held ?? [])],
      }),
    };
  }

  /** The version the engine serves: the newest unless the publish gate held it. */
  servedVersion(): number {
    return this.state.servedVersion ?? this.state.policyVersion;
  }

  registerHandlers(): void {
    setHandler(sampleScoredSignal, (delivery) => this.receive(delivery));
    setHandler(trainingStatusQuery, () => this.status());
    setHandler(lineageQuery, (filter) =>
      filter?.version === undefined
        ? [...this.state.lineage]
        : this.state.lineage.filter((e) => e.version === filter.version),
    );
    setHandler(pauseUpdate, () => {
      this.state.paused = true;
      return this.status();
    });
    setHandler(resumeUpdate, () => {
      this.state.paused = false;
      return this.status();
    });
    if (this.behaviour.publishGate)
      setHandler(rollbackUpdate, ({ to }) => this.rollback(to), {
        validator: (request) => {
          const to = (request as { to?: unknown } | undefined)?.to;
          if (typeof to !== 'number' || !Number.isInteger(to) || to < 1)
            throw new Error('rollback needs --to vN with N a version number (1 or more)');
          if (!this.state.lineage.some((entry) => entry.version === to))
            throw new Error(`v${to} is not in this run's lineage (its last ${LINEAGE_KEPT} versions)`);
        },
      });
    setHandler(reconfigureUpdate, (change) => this.reconfigure(change), {
      validator: (change) => {
        const result = reconfigurationSchema.safeParse(change);
        if (!result.success) throw new Error(`invalid reconfiguration: ${describeZodError(result.error)}`);
      },
    });
  }

  /** Records the run's new incarnation, once, in the first execution that has one. */
  async beginIncarnation(): Promise<void> {
    if (this.beginsIncarnation && this.incarnation !== undefined)
      await bookkeeping.beginIncarnation({ runId: this.runId, incarnation: this.incarnation });
  }

  /** The next step's batch size: the configured one, or a part of a refused batch being split. */
  batchSize(): number {
    return this.isolation.batchSize(this.settings.batchSize);
  }

  batchReady(): boolean {
    return !this.state.paused && !this.rollingBack && this.queue.ready(this.batchSize());
  }

  /**
   * Waits until a batch is ready, bringing spilled samples back from the store before it waits on a batch they
   * would fill; continues as new instead once the history is full. False when the loop should look again.
   */
  async waitForBatch(): Promise<boolean> {
    const { queue } = this;
    while (queue.needsRefill(this.batchSize())) {
      await queue.refill(bookkeeping);
      // Samples a later scoring replaced while they waited in the store.
      if (this.behaviour.amendments)
        queue.removeEverywhere((ref) => this.amendments.isReplaced(ref.sampleId));
    }
    await condition(() => this.batchReady() || this.historyFull() || queue.needsRefill(this.batchSize()));
    if (this.batchReady()) return true;
    if (this.historyFull()) await this.continueAsNew({ spillBacklog: true });
    return false;
  }

  /**
   * Under the `drop` policy, excludes the waiting samples too far behind the policy, or off it (another
   * incarnation's); true if there were any.
   */
  async dropStaleSamples(): Promise<boolean> {
    if (this.settings.stalenessPolicy !== 'drop') return false;
    const stale = this.queue.removeWhere((ref) => this.isOffPolicy(ref));
    if (stale.length === 0) return false;
    const sampleIds = stale.map((ref) => ref.sampleId);
    const foreign = stale.filter((ref) => this.isForeign(ref)).map((ref) => ref.sampleId);
    await bookkeeping.recordStaleExclusions({
      sampleIds,
      policyVersion: this.state.policyVersion,
      maxPolicyLag: this.settings.maxPolicyLag,
      ...(foreign.length > 0 && { foreignSampleIds: foreign }),
    });
    this.isolation.forget(sampleIds);
    for (const _ of stale) this.exclude('stale-policy');
    return true;
  }

  planStep(): PlannedStep {
    const { batch, heldBack } = this.nextBatch();
    const version = this.state.policyVersion + 1;
    const stepId =
      this.incarnation === undefined
        ? `${this.runId}:v${version}`
        : `${this.runId}:${this.incarnation}:v${version}`;
    const step: PlannedStep = {
      batch,
      sampleIds: batch.map((ref) => ref.sampleId),
      version,
      stepId,
      ...(Object.keys(heldBack).length > 0 && { heldBack }),
    };
    this.inFlight = step;
    return step;
  }

  /**
   * The queue's first batch; with group training, at most `maxSamplesPerTenant` of one tenant while others'
   * samples wait (core/tenant-caps.ts), and while a refused batch is split, its next part (wherever its
   * samples are in the queue).
   */
  private nextBatch(): { batch: SampleRef[]; heldBack: Record<string, number> } {
    const size = this.batchSize();
    if (!this.behaviour.tenantCaps) return { batch: this.queue.peek(size), heldBack: {} };
    const part = this.isolation.nextPart();
    if (part !== null) {
      const ids = new Set(part);
      return { batch: this.queue.inMemory().filter((ref) => ids.has(ref.sampleId)), heldBack: {} };
    }
    return formCappedBatch(this.queue.inMemory(), size, this.settings.maxSamplesPerTenant ?? 0);
  }

  /** The trainer's calls under the current settings; a refused step fails at once, unretried. */
  trainer() {
    return proxyActivities<TrainingActivities>(
      trainerCalls(this.settings.heartbeatTimeoutMs, this.settings.trainerTaskQueue, { refusalsFail: true }),
    );
  }

  /** The step's trainer input; `staleness` says how samples too far behind the policy are marked. */
  trainStepInput(
    step: PlannedStep,
    staleness: Pick<TrainStepInput, 'useRolloutLogprobs' | 'staleSampleIds'>,
  ): TrainStepInput {
    const { settings, state, incarnation } = this;
    return {
      runId: this.runId,
      stepId: step.stepId,
      sampleIds: step.sampleIds,
      method: this.method,
      loss: settings.loss,
      optimizer: settings.optimizer,
      ...staleness,
      ...(settings.distillTopK > 0 && { distillTopK: settings.distillTopK }),
      ...(this.behaviour.tenantCaps &&
        settings.tenantWeights !== undefined &&
        Object.keys(settings.tenantWeights).length > 0 && { tenantWeights: { ...settings.tenantWeights } }),
      resume: {
        lastStepId: state.lastStepId,
        lastCheckpoint: state.lastCheckpoint,
        // An incarnation's first step trains from the base model, whatever the trainer holds (also when the
        // run continued as new before that step, e.g. while it only received exclusions).
        ...(incarnation !== undefined && state.lastStepId === null && { fromBase: true }),
        // The trainer holds a held version: the step trains from the served one instead.
        ...(state.reloadServed && { reload: true }),
      },
    };
  }

  /**
   * Trains the step and publishes it. A batch the trainer refuses would be refused again: the samples that
   * cause it become exclusions (all of the batch's, in runs from before refusals were split), the version is
   * not used, and the result is null.
   */
  async trainStep(step: PlannedStep): Promise<PublishedStep | null> {
    // Samples from policies too far behind, or off this incarnation's policy, use their rollout log-probs
    // for the importance ratio.
    const staleness = {
      useRolloutLogprobs: false,
      staleSampleIds: step.batch.filter((ref) => this.isOffPolicy(ref)).map((ref) => ref.sampleId),
    };
    const gated = this.behaviour.publishGate === true && this.settings.gate !== undefined;
    const publish = {
      incarnation: this.incarnation,
      keepCheckpoints: this.settings.keepCheckpoints,
      ...(gated && { servedVersion: this.servedVersion() }),
    };
    const trainer = this.trainer();
    try {
      return await trainAndPublish(
        trainer,
        this.trainStepInput(step, staleness),
        step.version,
        publish,
        gated ? () => this.evaluate(trainer, step) : undefined,
      );
    } catch (error) {
      this.inFlight = null;
      const refusal = refusalOf(error);
      if (refusal === null) throw error;
      if (this.behaviour.isolateRefusals) {
        await this.isolateRefusal(step, refusal);
        return null;
      }
      const { sampleIds, stepId, batch } = step;
      await bookkeeping.recordRefusedBatch({ sampleIds, stepId, detail: refusal.message });
      this.queue.take(batch.length);
      this.exclude('trainer-refused', batch.length);
      this.state.lastRefusal = { stepId, samples: batch.length, detail: refusal.message };
      return null;
    }
  }

  /**
   * A refused batch: the samples the refusal names, or a refused single sample, become exclusions; a larger
   * batch that names none is split, and the next steps train its parts (workflows/refusal-isolation.ts).
   */
  private async isolateRefusal(step: PlannedStep, refusal: Refusal): Promise<void> {
    const outcome = this.isolation.refused(step.sampleIds, refusal.sampleIds);
    if (!('exclude' in outcome)) return;
    const { stepId } = step;
    const sampleIds = outcome.exclude;
    await bookkeeping.recordRefusedBatch({ sampleIds, stepId, detail: refusal.message });
    const refused = new Set(sampleIds);
    this.queue.removeWhere((ref) => refused.has(ref.sampleId));
    this.exclude('trainer-refused', sampleIds.length);
    this.state.lastRefusal = { stepId, samples: sampleIds.length, detail: refusal.message };
  }

  /**
   * Serves vN's weights as version M+1 and trains on from them. Waits for the step in progress; the update's
   * id makes a retried request one rollback (Temporal answers a repeated update id with its first result).
   */
  private async rollback(to: number): Promise<LineageEntry> {
    await condition(() => this.inFlight === null && !this.rollingBack);
    this.rollingBack = true;
    try {
      const from = this.state.lineage.find((entry) => entry.version === to);
      if (from === undefined) throw ApplicationFailure.nonRetryable(`v${to} is not in this run's lineage`);
      const version = this.state.policyVersion + 1;
      const checkpoint = await this.trainer().rollbackTo({
        runId: this.runId,
        ...(this.incarnation !== undefined && { incarnation: this.incarnation }),
        from: { version: to, checkpoint: from.checkpoint },
        version,
      });
      const entry: LineageEntry = {
        version,
        stepId: from.stepId,
        sampleIds: [],
        checkpoint,
        metrics: {},
        ...(this.incarnation !== undefined && { incarnation: this.incarnation }),
        publishedAt: new Date().toISOString(),
        rollbackOf: to,
      };
      await bookkeeping.recordLineage({ runId: this.runId, entry });
      const { state } = this;
      state.policyVersion = version;
      state.servedVersion = version;
      // The trainer loads vN's checkpoint before the next step, whatever it holds.
      state.lastStepId = from.stepId;
      state.lastCheckpoint = checkpoint;
      state.reloadServed = true;
      state.lineage = [...state.lineage, entry].slice(-LINEAGE_KEPT);
      return entry;
    } finally {
      this.rollingBack = false;
    }
  }

  /** The publish gate's verdict on the step's version, against the served one. */
  private evaluate(trainer: ReturnType<TrainingRun['trainer']>, step: PlannedStep) {
    const { gate } = this.settings;
    if (gate === undefined) throw new Error('no publish gate to evaluate with');
    return trainer.evaluateCandidate({
      runId: this.runId,
      ...(this.incarnation !== undefined && { incarnation: this.incarnation }),
      stepId: step.stepId,
      version: step.version,
      servedVersion: this.servedVersion(),
      servedCheckpoint: this.state.lastCheckpoint,
      gate,
    });
  }

  /** Records which samples made the new version, then takes the batch off the queue. */
  async recordStep(step: PlannedStep, { metrics, checkpoint, evaluation }: PublishedStep): Promise<void> {
    const { state, incarnation } = this;
    const { version, stepId, sampleIds, batch, heldBack } = step;
    const tenants = samplesByTenant(sampleIds);
    const weights = this.behaviour.tenantCaps ? weightsUsed(this.settings.tenantWeights, tenants) : {};
    const entry: LineageEntry = {
      version,
      stepId,
      sampleIds,
      tenants,
      ...(heldBack !== undefined && { heldBack }),
      ...(Object.keys(weights).length > 0 && { weights }),
      checkpoint,
      metrics,
      ...(incarnation !== undefined && { incarnation }),
      ...(this.behaviour.publishGate && { publishedAt: new Date().toISOString() }),
      ...(evaluation !== undefined && { evaluation }),
    };
    await bookkeeping.recordLineage({ runId: this.runId, entry });

    if (this.behaviour.tenantCaps) {
      // The batch need not be the queue's front: the samples the cap held back keep their places.
      const trained = new Set(sampleIds);
      this.queue.removeWhere((ref) => trained.has(ref.sampleId));
    } else this.queue.take(batch.length);
    this.inFlight = null;
    this.isolation.trained(sampleIds);
    const served = this.servedVersion();
    state.policyVersion = version;
    state.stepsCompleted++;
    state.samplesTrained += batch.length;
    state.lastMetrics = metrics;
    if (evaluation?.decision === 'held') {
      // Version numbers stay monotonic; the engine keeps serving `served`, and the next step trains from it.
      state.servedVersion = served;
      state.reloadServed = true;
      const held = {
        version,
        score: evaluation.score,
        baseline: evaluation.baseline,
        reason: evaluation.reason ?? '',
      };
      state.held = [held, ...(state.held ?? [])].slice(0, HELD_KEPT);
    } else {
      state.lastStepId = stepId;
      state.lastCheckpoint = checkpoint;
      if (this.behaviour.publishGate) {
        state.servedVersion = version;
        state.reloadServed = false;
      }
    }
    state.lineage = [...state.lineage, entry].slice(-LINEAGE_KEPT);
    this.stepsThisRun++;
  }

  /** Whether this execution has trained its share of steps (or the server suggests a new one). */
  stepsDue(): boolean {
    return (
      this.stepsThisRun >= this.settings.continueAsNewAfterSteps || workflowInfo().continueAsNewSuggested
    );
  }

  /** After a step: continues as new when enough steps ran or the history is full. */
  async continueAsNewIfDue(): Promise<void> {
    if (this.stepsDue()) await this.continueAsNew({ spillBacklog: true });
    if (this.historyFull()) await this.continueAsNew({ spillBacklog: true });
  }

  /**
   * Carries the state into a new execution; with `spillBacklog`, waiting samples beyond the carried bound go
   * to the store first (runs before incarnations carry them all).
   */
  async continueAsNew({ spillBacklog }: { spillBacklog: boolean }): Promise<never> {
    await allHandlersFinished();
    const recentIds = [...this.recent].slice(-RECENT_IDS_KEPT);
    if (spillBacklog && this.incarnation !== undefined)
      await this.queue.spill(bookkeeping, this.runId, this.incarnation);
    return continueAsNew<TrainingWorkflow>({
      runId: this.runId,
      method: this.method,
      settings: this.settings,
      carried: {
        ...this.state,
        ...this.queue.carry(),
        recentIds,
        isolation: this.isolation.carry(),
        ...(this.behaviour.amendments && { amendments: this.amendments.carry() }),
      },
    });
  }

  /**
   * Samples come from the served version: with the publish gate the lag is counted from it, so held versions do
   * not make every new sample stale (the next step trains from the served weights, these samples' π_old).
   */
  isStale(ref: SampleRef): boolean {
    const current = this.behaviour.publishGate ? this.servedVersion() : this.state.policyVersion;
    return current - ref.policyVersion > this.settings.maxPolicyLag;
  }

  /**
   * Whether the sample's π_old is not the run's own policy at its version: too far behind (`isStale`), or
   * served by weights this incarnation never published (`isForeign`). Its rollout log-probs are then π_old.
   */
  isOffPolicy(ref: SampleRef): boolean {
    return this.isStale(ref) || this.isForeign(ref);
  }

  /**
   * Served by another incarnation of the run id (a version number is counted again from 0 by each), or by a
   * version above the run's own (negative lag: weights it never published). Runs from before this rule: never.
   */
  isForeign(ref: SampleRef): boolean {
    if (!this.behaviour.offPolicyIncarnations) return false;
    if (ref.policyVersion > this.state.policyVersion) return true;
    return ref.servedByIncarnation !== undefined && ref.servedByIncarnation !== this.incarnation;
  }

  /** A run that only receives exclusions, or a paused one, continues as new while it waits. */
  private historyFull(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= this.settings.continueAsNewAfterEvents;
  }

  private receive(delivery: SampleDelivery): void {
    const id = delivery.ok ? delivery.sample.sampleId : delivery.exclusion.sampleId;
    const amends = delivery.ok ? delivery.sample.amends : delivery.exclusion.amends;
    if (amends !== undefined && this.behaviour.amendments) {
      this.receiveAmendment(id, amends, delivery);
      return;
    }
    if (this.recent.has(id)) return;
    this.recent.add(id);
    if (delivery.ok) this.queue.push(delivery.sample);
    else this.exclude(delivery.exclusion.reason);
  }

  /**
   * A later scoring of a turn (explicit feedback): it replaces the turn's waiting sample, or the exclusion the
   * turn had; once the turn trained (or is in the step being trained), it is kept against that version.
   */
  private receiveAmendment(id: string, amends: Amendment, delivery: SampleDelivery): void {
    if (this.recent.has(id)) return;
    this.recent.add(id);
    const decision = this.amendments.decide(id, amends, (ids) => {
      if (this.inFlight?.sampleIds.some((sampleId) => ids.has(sampleId))) return this.inFlight.version;
      return trainedVersionIn(this.state.lineage, ids);
    });
    if (decision.kind !== 'replace') return;
    this.queue.removeEverywhere((ref) => decision.remove.has(ref.sampleId));
    // The first scoring, if it arrives after this one, is not trained either.
    this.recent.add(amends.sampleId);
    if (delivery.ok) this.queue.push(delivery.sample);
    else this.exclude(delivery.exclusion.reason);
  }

  private exclude(reason: string, count = 1): void {
    this.state.samplesExcluded += count;
    this.state.exclusionsByReason[reason] = (this.state.exclusionsByReason[reason] ?? 0) + count;
  }

  private reconfigure(change: TrainingReconfiguration): TrainingRunStatus {
    const valid = reconfigurationSchema.parse(change);
    const { settings } = this;
    this.settings = {
      ...settings,
      ...(valid.batchSize !== undefined && { batchSize: valid.batchSize }),
      ...(valid.maxPolicyLag !== undefined && { maxPolicyLag: valid.maxPolicyLag }),
      ...(valid.stalenessPolicy !== undefined && { stalenessPolicy: valid.stalenessPolicy }),
      ...(valid.keepCheckpoints !== undefined && { keepCheckpoints: valid.keepCheckpoints }),
      ...(valid.maxSamplesPerTenant !== undefined && { maxSamplesPerTenant: valid.maxSamplesPerTenant }),
      ...(valid.tenantWeights !== undefined && { tenantWeights: valid.tenantWeights }),
      loss: { ...settings.loss, ...valid.loss },
      optimizer: { ...settings.optimizer, ...valid.optimizer },
    };
    return this.status();
  }
}
