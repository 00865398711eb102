/**
 * slime as a trainer backend: every training step is one container (the epoch contract, docs/slime.md). The
 * step's batch is written to a file under a checkpoint folder shared with the container; the container resumes
 * from the last checkpoint, trains, saves the next checkpoint atomically with the applied step ids, and exits.
 * The backend's whole state is that folder (`LATEST` names the current checkpoint), so any worker on the
 * host can take the next step, and a step id already in the current checkpoint never trains again.
 */

import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { ApplicationFailure, Context } from '@temporalio/activity';
import Docker from 'dockerode';
import {
  type LossConfig,
  NO_SAMPLE_WEIGHTS,
  type OptimizerConfig,
  type TrainerBackend,
  type TrainerSample,
  type TrainStepMetrics,
  weightedSamples,
} from '../trainer-backend.js';
import { trainerRefusal } from '../trainer-refusal.js';
import { type EpochCommandBuilder, referenceEpochCommand } from './slime-epoch-command.js';
import { trainStepRequest } from './train-step-request.js';

/** Failure type of a trainer container that did not finish its epoch (retryable: the next try starts over). */
export const TRAINER_EPOCH_FAILED = 'TrainerEpochFailed';
/** Exit status of an epoch container that refused its batch file (slime_plugin/epoch.py, train_epoch.py). */
export const EPOCH_REFUSED = 66;
export const EPOCH_LABEL = 'openclaw.trainer-epoch';
/** Where slime's launcher keeps slime's own checkpoint inside a published one (slime_plugin/epoch.py). */
export const SLIME_RAW_CHECKPOINT = 'slime';
const LOG_TAIL_LINES = 40;

export interface SlimeTrainerOptions {
  /** The trainer image: a slime image on a GPU host, the reference engine image in tests. */
  image: string;
  /** Host folder shared with every epoch container (mounted at the same path): batches and checkpoints. */
  sharedDir: string;
  /** Base Hugging Face model folder on the host (mounted read-only at the same path). */
  baseModel: string;
  /** GPUs given to the container (DeviceRequests); 0 runs on CPU. */
  gpus?: number;
  /** Which GPUs (ids or UUIDs as `nvidia-smi` lists them), so epochs stay off the serving engine's. */
  gpuIds?: string[];
  /** What the container runs; default the reference engine's `train-epoch`. */
  command?: EpochCommandBuilder;
  /** Appended to the command (for slime: extra train_async.py arguments). */
  extraArgs?: string[];
  /** Extra binds (`host:container[:ro]`), e.g. a plugin checkout. */
  binds?: string[];
  /** Container user; default this process's uid:gid, so the host can read and remove what it writes. */
  user?: string;
  /** Checkpoints kept in the shared folder, newest first (the current one always); default 2. */
  keepCheckpoints?: number;
  /** Shared memory for the container in bytes (NCCL and dataloaders need more than Docker's 64 MiB). */
  shmBytes?: number;
  docker?: Docker;
  /** Each log line of the container; default to stderr with a prefix. */
  onLog?: (line: string) => void;
}

interface CheckpointState {
  steps: Record<string, { metrics: Record<string, unknown> }>;
}

interface EpochEvent {
  event: string;
  t: number;
}

function stepKey(stepId: string): string {
  const readable = stepId.replace(/[^A-Za-z0-9_.-]+/g, '_').slice(0, 40);
  return `${readable}-${createHash('sha256').update(stepId).digest('hex').slice(0, 12)}`;
}

async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = `${path}.tmp-${randomBytes(6).toString('hex')}`;
  await writeFile(tmp, data);
  await rename(tmp, path);
}

export class SlimeTrainerBackend implements TrainerBackend {
  readonly name = 'slime';
  private readonly docker: Docker;
  private readonly sharedDir: string;
  private readonly baseModel: string;
  private readonly command: EpochCommandBuilder;
  private readonly onLog: (line: string) => void;

  constructor(private readonly options: SlimeTrainerOptions) {
    this.docker = options.docker ?? new Docker();
    this.sharedDir = resolve(options.sharedDir);
    this.baseModel = resolve(options.baseModel);
    this.command = options.command ?? referenceEpochCommand();
    this.onLog = options.onLog ?? ((line) => process.stderr.write(`[trainer-epoch] ${line}\n`));
  }

  /** The checkpoint the next epoch resumes from, or null before the first step. */
  async currentCheckpoint(): Promise<string | null> {
    try {
      const latest = JSON.parse(await readFile(join(this.sharedDir, 'LATEST'), 'utf8')) as {
        checkpoint?: string;
      };
      return latest.checkpoint ?? null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async trainStep(
    stepId: string,
    samples: TrainerSample[],
    loss: LossConfig,
    optimizer: OptimizerConfig,
  ): Promise<TrainStepMetrics> {
    // slime's loss has no per-sample weight: refuse rather than train the samples unweighted.
    const weighted = weightedSamples(samples);
    if (weighted.length > 0) throw trainerRefusal(NO_SAMPLE_WEIGHTS('slime', weighted));
    const current = await this.currentCheckpoint();
    const done = current ? await this.recordedMetrics(current, stepId) : undefined;
    if (done) return { ...done, duplicate: true };

    const key = stepKey(stepId);
    const checkpointOut = join(this.sharedDir, 'checkpoints', key);
    // A worker that died after the container saved, before LATEST moved: the epoch is done, adopt it.
    const saved = await this.recordedMetrics(checkpointOut, stepId);
    if (saved) {
      await this.setCurrent(checkpointOut);
      return { ...saved, duplicate: true };
    }

    const temperature = batchTemperature(samples);
    const oldPolicy = oldPolicySource(samples, loss);
    const batchFile = join(this.sharedDir, 'batches', `${key}.json`);
    await mkdir(dirname(batchFile), { recursive: true });
    await mkdir(dirname(checkpointOut), { recursive: true });
    await writeFileAtomic(batchFile, JSON.stringify(trainStepRequest(stepId, samples, loss, optimizer)));
    await this.removeStaleTemporaries();

    const timing = await this.runEpoch({
      stepId,
      baseModel: this.baseModel,
      batchFile,
      sampleCount: samples.length,
      checkpointIn: current,
      checkpointOut,
      loss: { ...loss, useRolloutLogprobs: oldPolicy === 'rollout' },
      optimizer,
      temperature,
      distillTopk: samples[0]?.teacherTopkIndices?.[0]?.length,
      ...(oldPolicy === 'per-sample' && { perSampleOldPolicy: true }),
      ...(samples.some((sample) => (sample.images?.length ?? 0) > 0) && { images: true }),
    });
    const metrics = await this.recordedMetrics(checkpointOut, stepId);
    if (!metrics)
      throw ApplicationFailure.retryable(
        `the trainer container exited 0 but ${checkpointOut} does not record step ${stepId}`,
        TRAINER_EPOCH_FAILED,
      );
    await this.setCurrent(checkpointOut);
    await rm(batchFile, { force: true });
    await this.pruneCheckpoints(checkpointOut);
    return { ...metrics, ...timing, duplicate: false };
  }

  async hasApplied(stepId: string): Promise<boolean> {
    const current = await this.currentCheckpoint();
    return current !== null && (await this.recordedMetrics(current, stepId)) !== undefined;
  }

  async hasTrained(): Promise<boolean> {
    return (await this.currentCheckpoint()) !== null;
  }

  /** The next epoch starts from the base model (`--load` none); the checkpoints stay until pruned. */
  async resetToBase(): Promise<void> {
    await rm(join(this.sharedDir, 'LATEST'), { force: true });
  }

  /** Copies the current checkpoint to `path` (temp folder + rename, so `path` is whole or absent). */
  async saveCheckpoint(path: string): Promise<void> {
    await this.copyCurrent(path, () => true);
  }

  private async copyCurrent(path: string, keep: (source: string) => boolean): Promise<void> {
    const current = await this.currentCheckpoint();
    if (!current)
      throw ApplicationFailure.nonRetryable('nothing trained yet: no checkpoint to save', 'NoCheckpoint');
    const target = resolve(path);
    if (target === current) return;
    const tmp = join(dirname(target), `.${randomBytes(6).toString('hex')}.tmp`);
    await mkdir(dirname(target), { recursive: true });
    await cp(current, tmp, { recursive: true, filter: keep });
    await rm(target, { recursive: true, force: true });
    await rename(tmp, target);
  }

  /** Makes `path` the checkpoint the next epoch resumes from (copied in when outside the shared folder). */
  async loadCheckpoint(path: string): Promise<void> {
    const source = resolve(path);
    if (!existsSync(join(source, 'trainer_state', 'state.json')))
      throw ApplicationFailure.nonRetryable(`${path} is not a trainer checkpoint`, 'BadCheckpoint');
    const inside = relative(this.sharedDir, source);
    if (!inside.startsWith('..') && !isAbsolute(inside)) {
      await this.setCurrent(source);
      return;
    }
    const name = `imported-${stepKey(source)}`;
    const imported = join(this.sharedDir, 'checkpoints', name);
    if (!existsSync(imported)) {
      // Named like a half-written checkpoint, so an interrupted copy is swept by removeStaleTemporaries.
      const tmp = join(this.sharedDir, 'checkpoints', `.${name}.tmp-${randomBytes(6).toString('hex')}`);
      await mkdir(dirname(imported), { recursive: true });
      await cp(source, tmp, { recursive: true });
      await rename(tmp, imported);
    }
    await this.setCurrent(imported);
  }

  /**
   * Checkpoints are Hugging Face model folders (the contract), which the serving engine loads as they are. A
   * version published for serving leaves out slime's own checkpoint (`slime/`: sharded weights and optimizer
   * state, many times the model's size); the shared folder keeps that for the next epochs.
   */
  async exportForServing(path: string): Promise<string> {
    const current = await this.currentCheckpoint();
    const raw = current ? join(current, SLIME_RAW_CHECKPOINT) : null;
    await this.copyCurrent(path, (source) => source !== raw);
    return resolve(path);
  }

  // ---- the epoch container ------------------------------------------------------------------------

  private async runEpoch(epoch: Parameters<EpochCommandBuilder>[0]): Promise<Record<string, number>> {
    const { cmd, env } = this.command(epoch);
    const name = `openclaw-trainer-epoch-${createHash('sha256')
      .update(`${this.sharedDir}\0${epoch.stepId}`)
      .digest('hex')
      .slice(0, 16)}`;
    // A container of an earlier attempt of this step (its worker died): it must not race this one.
    await this.docker
      .getContainer(name)
      .remove({ force: true })
      .catch(() => undefined);
    const gpus = this.options.gpus ?? 0;
    const container = await this.docker.createContainer({
      name,
      Image: this.options.image,
      Cmd: [...cmd, ...(this.options.extraArgs ?? [])],
      Env: ['HOME=/tmp', ...Object.entries(env).map(([k, v]) => `${k}=${v}`)],
      User: this.options.user ?? `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`,
      Labels: { [EPOCH_LABEL]: epoch.stepId },
      HostConfig: {
        Binds: [
          `${this.sharedDir}:${this.sharedDir}`,
          `${this.baseModel}:${this.baseModel}:ro`,
          ...(this.options.binds ?? []),
        ],
        NetworkMode: 'none',
        // An init process as PID 1: a stop's SIGTERM reaches the trainer (PID 1 ignores it), zombies are reaped.
        Init: true,
        ShmSize: this.options.shmBytes,
        DeviceRequests: gpuDeviceRequests(gpus, this.options.gpuIds),
      },
    });
    let context: Context | undefined;
    try {
      context = Context.current();
    } catch {
      context = undefined;
    }
    const stop = () => void container.stop({ t: 10 }).catch(() => undefined);
    context?.cancellationSignal.addEventListener('abort', stop);
    const tail: string[] = [];
    const events = new Map<string, number>();
    try {
      const stream = await container.attach({ stream: true, stdout: true, stderr: true });
      const onLine = (line: string) => {
        this.onLog(line);
        tail.push(line);
        if (tail.length > LOG_TAIL_LINES) tail.shift();
        const event = parseEvent(line);
        if (event) events.set(event.event, event.t);
        context?.heartbeat(`epoch ${epoch.stepId}: ${line.slice(0, 200)}`);
      };
      // One line splitter per stream: progress bars on stderr must not glue onto stdout's JSON lines.
      const stdout = lineStream(onLine);
      const stderr = lineStream(onLine);
      this.docker.modem.demuxStream(stream, stdout.sink, stderr.sink);
      const drained = new Promise<void>((done) => stream.on('end', done));
      const startedAt = Date.now() / 1000;
      await container.start();
      const { StatusCode } = (await container.wait()) as { StatusCode: number };
      const endedAt = Date.now() / 1000;
      // The attach stream ends once the container's output is all delivered; wait for it, not forever.
      await Promise.race([drained, new Promise((done) => setTimeout(done, 2_000).unref())]);
      stdout.flush();
      stderr.flush();
      (stream as unknown as { destroy(): void }).destroy();
      if (context?.cancellationSignal.aborted) throw context.cancellationSignal.reason;
      if (StatusCode === EPOCH_REFUSED)
        throw trainerRefusal(
          `the trainer container refused the batch of step ${epoch.stepId}:\n${tail.slice(-5).join('\n')}`,
        );
      if (StatusCode !== 0)
        throw ApplicationFailure.retryable(
          `trainer container for step ${epoch.stepId} exited with ${StatusCode}:\n${tail.slice(-10).join('\n')}`,
          TRAINER_EPOCH_FAILED,
        );
      return epochTiming(startedAt, endedAt, events);
    } finally {
      context?.cancellationSignal.removeEventListener('abort', stop);
      await container.remove({ force: true }).catch(() => undefined);
    }
  }

  private async recordedMetrics(checkpoint: string, stepId: string): Promise<TrainStepMetrics | undefined> {
    let state: CheckpointState;
    try {
      state = JSON.parse(
        await readFile(join(checkpoint, 'trainer_state', 'state.json'), 'utf8'),
      ) as CheckpointState;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const record = state.steps?.[stepId];
    return record ? (record.metrics as TrainStepMetrics) : undefined;
  }

  private async setCurrent(checkpoint: string): Promise<void> {
    await mkdir(this.sharedDir, { recursive: true });
    await writeFileAtomic(join(this.sharedDir, 'LATEST'), JSON.stringify({ checkpoint }));
  }

  /** Full-model checkpoints are large: keep the newest few (exported copies live elsewhere). */
  private async pruneCheckpoints(current: string): Promise<void> {
    const dir = join(this.sharedDir, 'checkpoints');
    const keep = Math.max(1, this.options.keepCheckpoints ?? 2);
    const entries = (await readdir(dir)).filter((e) => !e.startsWith('.')).map((e) => join(dir, e));
    const dated = await Promise.all(
      entries.map(async (path) => ({ path, mtime: (await stat(path)).mtimeMs })),
    );
    dated.sort((a, b) => b.mtime - a.mtime);
    const kept = new Set([current, ...dated.slice(0, keep).map((d) => d.path)]);
    for (const { path } of dated) if (!kept.has(path)) await rm(path, { recursive: true, force: true });
  }

  /** Half-written checkpoints of killed containers (`.<name>.tmp-*`); whole ones are renamed into place. */
  private async removeStaleTemporaries(): Promise<void> {
    const dir = join(this.sharedDir, 'checkpoints');
    for (const entry of await readdir(dir).catch(() => [] as string[]))
      if (entry.startsWith('.') && entry.includes('.tmp-'))
        await rm(join(dir, entry), { recursive: true, force: true });
  }
}

/**
 * Where the step's π_old comes from. A sample's own `useRolloutLogprobs` (set for a stale sample) wins over the
 * step's, as in the reference trainer (`LossRequest.rollout_old`). All samples alike: slime's one
 * `--use-rollout-logprobs` switch says it. A mix: `per-sample`, and the plugin's losses read each sample's flag
 * from the batch file, so only the stale samples use their rollout log-probs.
 */
export function oldPolicySource(
  samples: readonly TrainerSample[],
  loss: Pick<LossConfig, 'useRolloutLogprobs'>,
): 'recomputed' | 'rollout' | 'per-sample' {
  const rollout = samples.map((s) => s.useRolloutLogprobs ?? loss.useRolloutLogprobs);
  if (rollout.length > 0 && rollout.every(Boolean)) return 'rollout';
  return rollout.some(Boolean) ? 'per-sample' : 'recomputed';
}

/**
 * The one temperature slime computes a step's log-probs at (`--rollout-temperature`): every sample of the batch
 * must have been drawn at it, or the step is refused (slime has no per-sample temperature).
 */
export function batchTemperature(samples: readonly TrainerSample[]): number {
  const temperatures = [...new Set(samples.map((s) => s.temperature ?? 1))];
  if (temperatures.length > 1)
    throw trainerRefusal(
      `slime trains a step at one --rollout-temperature, and this batch mixes temperatures ${temperatures.join(', ')}`,
    );
  return temperatures[0] ?? 1;
}

/** Docker's GPU request: the listed devices, else any `count` of them; none on CPU. */
export function gpuDeviceRequests(count: number, ids: string[] = []): Docker.DeviceRequest[] | undefined {
  if (ids.length > 0) return [{ Driver: 'nvidia', DeviceIDs: ids, Capabilities: [['gpu']] }];
  return count > 0 ? [{ Driver: 'nvidia', Count: count, Capabilities: [['gpu']] }] : undefined;
}

function lineStream(onLine: (line: string) => void): { sink: PassThrough; flush(): void } {
  const sink = new PassThrough();
  let pending = '';
  const emit = (line: string) => {
    if (line.trim()) onLine(line);
  };
  sink.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split(/\r?\n|\r/);
    pending = lines.pop() ?? '';
    for (const line of lines) emit(line);
  });
  return {
    sink,
    flush() {
      emit(pending);
      pending = '';
    },
  };
}

function parseEvent(line: string): EpochEvent | undefined {
  if (!line.startsWith('{"event"')) return undefined;
  try {
    const parsed = JSON.parse(line) as EpochEvent;
    return typeof parsed.t === 'number' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Where the epoch's time went, in seconds from `container.start()` (events the command printed, if any). */
function epochTiming(
  startedAt: number,
  endedAt: number,
  events: Map<string, number>,
): Record<string, number> {
  const timing: Record<string, number> = { epoch_container_s: round(endedAt - startedAt) };
  const started = events.get('started');
  const ready = events.get('ready');
  const trained = events.get('trained');
  if (started !== undefined) timing.epoch_process_start_s = round(started - startedAt);
  if (ready !== undefined) timing.epoch_startup_s = round(ready - startedAt);
  if (ready !== undefined && trained !== undefined) timing.epoch_train_s = round(trained - ready);
  return timing;
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}
