import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { LossMethod } from '../core/loss-settings.js';
import { beginIncarnationRecord, type RunRecord } from '../core/run-record.js';
import { adapterName } from '../core/tenant-adapters.js';
import { tenantWeight } from '../core/tenant-caps.js';
import { lineageKey, runRecordKey } from '../core/training-keys.js';
import { exclusionKey, sampleKey } from '../core/turn-record.js';
import type {
  Method,
  SampleExclusion,
  SampleExclusionReason,
  SampleRef,
  TeacherTopK,
  TrainingSample,
} from '../core/types.js';
import type { EngineAdapter } from '../engines/engine-adapter.js';
import type { SampleStore } from '../store/sample-store.js';
import { writeRunScalars } from '../store/tensorboard-events.js';
import type { LineageEntry, LossSettings, OptimizerSettings } from '../workflows/training-signals.js';
import { adapterFolder, checkpointPath, isPublishedVersion } from './checkpoint-paths.js';
import { createGateActivities } from './gate-activities.js';
import { withHeartbeats } from './heartbeats.js';
import type { Judge } from './judge-client.js';
import { createRollbackActivities } from './rollback-activities.js';
import type { TrainerBackend, TrainerSample } from './trainer-backend.js';
import { loadSampleImages } from './trainer-backends/sample-images.js';
import { asTrainerRefusal, trainerRefusal } from './trainer-refusal.js';
import { TRAINER_LOST_STEP } from './training-errors.js';

/**
 * A version's metrics as TensorBoard scalars at step = version, so a run sits beside a person's other runs. For
 * watching only: a write that fails is logged and the lineage (the record) stands.
 */
async function writeVersionScalars(logDir: string, runId: string, entry: LineageEntry): Promise<void> {
  const scalars: Record<string, number> = { ...entry.metrics, samples: entry.sampleIds.length };
  if (entry.evaluation) {
    scalars['eval/score'] = entry.evaluation.score;
    scalars['eval/held'] = entry.evaluation.decision === 'held' ? 1 : 0;
  }
  const at = entry.publishedAt ? Date.parse(entry.publishedAt) : Date.now();
  await writeRunScalars(logDir, runId, entry.version, scalars, at / 1000).catch((error: Error) =>
    console.error(`tensorboard: v${entry.version} of ${runId} not written: ${error.message}`),
  );
}

export interface TrainingDependencies {
  store: SampleStore;
  trainer: TrainerBackend;
  /**
   * The trainer of a run, where runs train different things: a tenant's adapter run (core/tenant-adapters.ts)
   * trains that adapter only. Absent: every run trains `trainer`.
   */
  trainerOf?: (runId: string) => TrainerBackend;
  /** The serving engine that receives each new policy version. */
  serving: EngineAdapter;
  /** Checkpoints go under `<checkpointDir>/<runId>/<incarnation>/v<version>`. */
  checkpointDir: string;
  /** The publish gate's `judge` scorer (absent: only `style:<rule>` scorers gate), with its votes per reply. */
  judge?: Judge;
  judgeVotes?: number;
  /** TensorBoard event files of each run's versions go under `<tensorboardDir>/<runId>/` (absent: none). */
  tensorboardDir?: string;
}

export interface TrainStepInput {
  runId: string;
  stepId: string;
  sampleIds: string[];
  /**
   * Or the store key of a record whose `sampleIds` lists them (a Track 2 step's manifest), so the input
   * stays small however many samples the step has; `sampleIds` is then empty.
   */
  sampleIdsKey?: string;
  method: Method;
  loss: LossSettings;
  optimizer: OptimizerSettings;
  /** Every sample's π_old is its rollout log-probs (inputs from before `staleSampleIds` existed). */
  useRolloutLogprobs: boolean;
  /** The samples more than `maxPolicyLag` versions old: only they use their rollout log-probs as π_old. */
  staleSampleIds?: string[];
  /** opd with K > 0: top-K distillation against the teacher's K best log-probs (spec 6.6). */
  distillTopK?: number;
  /** Group training: each tenant's samples' loss weight (a tenant not listed: 1). */
  tenantWeights?: Record<string, number>;
  /**
   * The run's last trained step and its checkpoint: a trainer that restarted is brought back to them first.
   * `fromBase`: the first step of a run (id) started anew, which trains from the base model whatever the
   * trainer holds (another incarnation's weights must never become this one's).
   */
  resume: {
    lastStepId: string | null;
    lastCheckpoint: string | null;
    fromBase?: boolean;
    /**
     * The trainer holds a version the publish gate held: go back to the served one (`lastCheckpoint`, or the
     * base when `fromBase`) even though it has applied `lastStepId`, so the regression is not trained on.
     */
    reload?: boolean;
  };
}

export interface PublishInput {
  runId: string;
  stepId: string;
  version: number;
  /** The run's incarnation: its checkpoints live in a folder of their own (absent: the older layout). */
  incarnation?: string;
  /** Checkpoint folders of this incarnation kept after publishing, newest first; 0 or absent keeps all. */
  keepCheckpoints?: number;
  /** False: the checkpoint is saved and not served (the publish gate held it). Absent: served. */
  serve?: boolean;
  /** The served version, never pruned while held versions come after it (absent: `version`). */
  servedVersion?: number;
}

/** Track 1 methods map onto the trainer's loss: binary RL is GRPO with the judge's reward. */
const LOSS_METHOD: Record<Method, LossMethod> = { rl: 'grpo', opd: 'opd', combine: 'combine' };

export type { RunRecord };
// Imported from here by the engines' launchers and tests.
export { adapterFolder, checkpointPath, isPublishedVersion };

interface StoredTeacher {
  topK: TeacherTopK | null;
}

/** A step's sample ids: inline, or read from the record at `sampleIdsKey`. */
async function sampleIdsOf(store: SampleStore, input: TrainStepInput): Promise<string[]> {
  if (input.sampleIdsKey === undefined) return input.sampleIds;
  const record = await store.get<{ sampleIds?: unknown }>(input.sampleIdsKey);
  if (!Array.isArray(record?.sampleIds))
    throw ApplicationFailure.nonRetryable(
      `no sample ids at ${input.sampleIdsKey} in the store`,
      'MissingSample',
    );
  return record.sampleIds.map(String);
}

export function createTrainingActivities(deps: TrainingDependencies) {
  const { store } = deps;
  const trainerOf = deps.trainerOf ?? (() => deps.trainer);

  /** The trainer's view of a stored sample for this step: its flags, its teacher, its top-K rows. */
  async function trainerSample(
    sampleId: string,
    stale: ReadonlySet<string>,
    topK: number,
  ): Promise<TrainerSample> {
    const sample = await store.get<TrainingSample>(sampleKey(sampleId));
    if (!sample) throw trainerRefusal(`sample ${sampleId} is not in the store`, [sampleId]);
    let rows =
      sample.teacherTopkLogProbs && sample.teacherTopkIndices
        ? { logProbs: sample.teacherTopkLogProbs, tokenIds: sample.teacherTopkIndices }
        : null;
    if (topK > 0 && rows === null && sample.teacherTopKKey)
      rows = (await store.get<StoredTeacher>(sample.teacherTopKKey))?.topK ?? null;
    if (topK > 0 && rows === null)
      throw trainerRefusal(
        `sample ${sampleId} has no teacher top-K log-probs for top-K distillation: the scoring worker computes them only with teacher.topK > 0 (OPENCLAW_TEACHER_TOP_K)`,
        [sampleId],
      );
    return {
      tokens: sample.tokens,
      responseLength: sample.responseLength,
      lossMask: sample.lossMask,
      rolloutLogProbs: sample.rolloutLogProbs,
      reward: sample.reward,
      // Combine's RL-only rows train without a teacher (term exactly 0); older ones stored the rollout
      // log-probs as their teacher, which every trainer also reads as none.
      teacherLogProbs: sample.kind === 'rl' ? undefined : sample.teacherLogProbs,
      ...(topK > 0 &&
        rows && {
          teacherTopkLogProbs: rows.logProbs.map((row) => row.slice(0, topK)),
          teacherTopkIndices: rows.tokenIds.map((row) => row.slice(0, topK)),
        }),
      ...(sample.temperature !== undefined && { temperature: sample.temperature }),
      ...(stale.has(sampleId) && { useRolloutLogprobs: true }),
      // Image bytes are read here, in the activity, so they never travel in a workflow's payload.
      ...(sample.images !== undefined &&
        sample.images.length > 0 && { images: await loadSampleImages(store, sampleId, sample.images) }),
    };
  }

  /** Moves samples to the exclusions with `reason` (their data kept for audit): a turn is never both. */
  async function moveToExclusions(
    sampleIds: readonly string[],
    reason: SampleExclusionReason,
    detail: string,
  ): Promise<void> {
    for (const sampleId of sampleIds) {
      const sample = await store.get<TrainingSample>(sampleKey(sampleId));
      const exclusion: SampleExclusion & { sample?: TrainingSample } = {
        sampleId,
        reason,
        detail,
        ...(sample && { sample }),
      };
      // Moved by an earlier attempt: its exclusion is already there.
      if (sample === undefined && (await store.get(exclusionKey(sampleId))) !== undefined) continue;
      await store.put(exclusionKey(sampleId), exclusion);
      await store.delete(sampleKey(sampleId));
    }
  }

  /** From now on the engine serves this incarnation's weights (recorded once, at its first version). */
  async function markServing(runId: string, incarnation: string): Promise<void> {
    const record = await store.get<RunRecord>(runRecordKey(runId));
    if (record?.incarnation !== incarnation || record.servingFrom !== undefined) return;
    await store.put(runRecordKey(runId), { ...record, servingFrom: new Date().toISOString() });
  }

  /** Removes this incarnation's checkpoint folders older than the newest `keep` (the published one stays). */
  async function pruneCheckpoints(input: PublishInput, keep: number): Promise<void> {
    const dir = join(deps.checkpointDir, input.runId, ...(input.incarnation ? [input.incarnation] : []));
    const versions = (await readdir(dir).catch(() => [] as string[]))
      .map((name) => /^v(\d+)$/.exec(name))
      .filter((match): match is RegExpExecArray => match !== null)
      .map((match) => Number(match[1]))
      .filter((version) => version < input.version)
      .sort((a, b) => b - a);
    // The served version's folder stays: the next step resumes from it while newer ones are held.
    for (const version of versions.slice(Math.max(0, keep - 1)))
      if (version !== input.servedVersion)
        await rm(join(dir, `v${version}`), { recursive: true, force: true });
  }

  return {
    ...createGateActivities({
      store,
      trainerOf,
      ...(deps.judge !== undefined && { judge: deps.judge }),
      ...(deps.judgeVotes !== undefined && { judgeVotes: deps.judgeVotes }),
    }),

    ...createRollbackActivities({ serving: deps.serving, checkpointDir: deps.checkpointDir }),

    async trainStep(input: TrainStepInput): Promise<Record<string, number>> {
      const trainer = trainerOf(input.runId);
      return withHeartbeats(input.stepId, async () => {
        const { lastStepId, lastCheckpoint, fromBase } = input.resume;
        if (!(await trainer.hasApplied(input.stepId))) {
          if (fromBase) {
            // A run (id) started anew: whatever the trainer holds belongs to someone else.
            if (await trainer.hasTrained()) await trainer.resetToBase();
          } else if (
            lastStepId &&
            lastCheckpoint &&
            (input.resume.reload || !(await trainer.hasApplied(lastStepId)))
          ) {
            // A trainer process that restarted lost its state: resume it from the run's last checkpoint.
            await trainer.loadCheckpoint(lastCheckpoint);
          }
        }
        const topK = input.method === 'opd' ? (input.distillTopK ?? 0) : 0;
        const stale = new Set(input.staleSampleIds ?? []);
        const sampleIds = await sampleIdsOf(store, input);
        const samples: TrainerSample[] = [];
        for (const sampleId of sampleIds) {
          const sample = await trainerSample(sampleId, stale, topK);
          const weight = tenantWeight(input.tenantWeights, sampleId);
          samples.push(weight === 1 ? sample : { ...sample, weight });
        }
        let metrics: Awaited<ReturnType<TrainerBackend['trainStep']>>;
        try {
          metrics = await trainer.trainStep(
            input.stepId,
            samples,
            {
              ...input.loss,
              method: topK > 0 ? 'topk_distill' : LOSS_METHOD[input.method],
              useRolloutLogprobs: input.useRolloutLogprobs,
            },
            input.optimizer,
          );
        } catch (error) {
          throw asTrainerRefusal(error, sampleIds);
        }
        const numeric: Record<string, number> = {};
        for (const [key, value] of Object.entries(metrics))
          if (typeof value === 'number') numeric[key] = value;
        return numeric;
      });
    },

    /**
     * Saves the trained weights as version `version`, loads them into the serving engine, and prunes this
     * incarnation's older checkpoint folders beyond `keepCheckpoints`. Idempotent.
     */
    async publishWeights(input: PublishInput): Promise<string> {
      const trainer = trainerOf(input.runId);
      const adapter = adapterName(input.runId);
      return withHeartbeats(`publish v${input.version}`, async () => {
        const path = checkpointPath(deps.checkpointDir, input.runId, input.version, input.incarnation);
        if (await trainer.hasApplied(input.stepId)) {
          await trainer.exportForServing(path);
        } else if (!isPublishedVersion(path)) {
          // The trainer restarted after the step and before its checkpoint: publishing now would ship the
          // weights it restarted with. The workflow trains the step again (trainAndPublish).
          throw ApplicationFailure.nonRetryable(
            `the trainer no longer holds step ${input.stepId} and v${input.version} was never saved`,
            TRAINER_LOST_STEP,
          );
        }
        // Checkpoints are written atomically, so one that exists is whole: (re)load it into serving. A tenant's
        // adapter is loaded under the tenant's name; nobody else's serving pauses for it.
        if (input.serve === false) {
          // Held by the publish gate: kept for the lineage and a rollback, never served.
        } else if (adapter === null)
          await deps.serving.publishWeights({ path, version: String(input.version) });
        else
          await deps.serving.loadLoraAdapter({
            name: adapter,
            path: adapterFolder(path),
            version: String(input.version),
          });
        if (input.incarnation !== undefined && input.serve !== false)
          await markServing(input.runId, input.incarnation);
        if (input.keepCheckpoints) await pruneCheckpoints(input, input.keepCheckpoints);
        return path;
      });
    },

    async recordLineage(input: { runId: string; entry: LineageEntry }): Promise<void> {
      await store.put(lineageKey(input.runId, input.entry.version, input.entry.incarnation), input.entry);
      if (deps.tensorboardDir !== undefined)
        await writeVersionScalars(deps.tensorboardDir, input.runId, input.entry);
    },

    /**
     * Records which incarnation of the run id is current, so an engine restart serves only its weights; the
     * one before is kept under `earlier`, so scoring can still tell which incarnation served a turn.
     */
    async beginIncarnation(input: { runId: string; incarnation: string }): Promise<void> {
      const current = await store.get<RunRecord>(runRecordKey(input.runId));
      if (current?.incarnation === input.incarnation) return;
      const startedAt = new Date().toISOString();
      await store.put(
        runRecordKey(input.runId),
        beginIncarnationRecord(current, input.runId, input.incarnation, startedAt),
      );
    },

    /** `foreignSampleIds`: those of `sampleIds` served by weights this incarnation never published. */
    async recordStaleExclusions(input: {
      sampleIds: string[];
      policyVersion: number;
      maxPolicyLag: number;
      foreignSampleIds?: string[];
    }): Promise<void> {
      const foreign = new Set(input.foreignSampleIds ?? []);
      const behind = input.sampleIds.filter((id) => !foreign.has(id));
      await moveToExclusions(
        behind,
        'stale-policy',
        `more than ${input.maxPolicyLag} versions behind policy v${input.policyVersion}`,
      );
      await moveToExclusions(
        [...foreign],
        'stale-policy',
        `served by another incarnation of the run, or by a version above its policy v${input.policyVersion}: off-policy`,
      );
    },

    /** The samples of a batch the trainer refused become exclusions naming the step and the refusal. */
    async recordRefusedBatch(input: { sampleIds: string[]; stepId: string; detail: string }): Promise<void> {
      await moveToExclusions(
        input.sampleIds,
        'trainer-refused',
        `the trainer refused step ${input.stepId}: ${input.detail}`,
      );
    },

    /** Writes one chunk of waiting samples to the store, so the run's history need not carry them. */
    async spillPending(input: { key: string; refs: SampleRef[] }): Promise<void> {
      await store.put(input.key, input.refs);
    },

    /** Reads a spilled chunk back (it stays in the store until `dropBacklog`, so a retry reads it again). */
    async loadBacklog(input: { key: string }): Promise<SampleRef[]> {
      const refs = await store.get<SampleRef[]>(input.key);
      if (refs === undefined)
        throw ApplicationFailure.nonRetryable(`backlog chunk ${input.key} is missing`, 'MissingBacklog');
      return refs;
    },

    async dropBacklog(input: { keys: string[] }): Promise<void> {
      for (const key of input.keys) await store.delete(key);
    },
  };
}

export type TrainingActivities = ReturnType<typeof createTrainingActivities>;
