// The slime trainer backend's epoch containers through the real Docker engine, with the reference engine image
// (`openclaw/engine:dev`) standing in for the slime image: it implements the same epoch contract on CPU.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultLossConfig,
  defaultOptimizerConfig,
  type LossConfig,
  type TrainerSample,
} from '../../activities/trainer-backend.js';
import {
  EPOCH_LABEL,
  SLIME_RAW_CHECKPOINT,
  SlimeTrainerBackend,
} from '../../activities/trainer-backends/slime-trainer.js';
import { makeTinyModel } from '../../engines/reference-engine-process.js';
import { describeTrainerBackendContract } from '../contracts/trainer-backend-contract.js';

const IMAGE = 'openclaw/engine:dev';
const ENGINE_SOURCE = resolve('engine/openclaw_engine');
const docker = new Docker();

const grpo: LossConfig = { ...defaultLossConfig, method: 'grpo' };
const optimizer = { ...defaultOptimizerConfig, learningRate: 1e-3 };

function sample(reward: number, response: number[]): TrainerSample {
  return {
    tokens: [1, 2, 3, ...response],
    responseLength: response.length,
    lossMask: response.map(() => 1),
    rolloutLogProbs: response.map(() => -1),
    reward,
  };
}

async function epochContainers(sharedDir: string): Promise<Docker.ContainerInfo[]> {
  const all = await docker.listContainers({ all: true, filters: { label: [EPOCH_LABEL] } });
  return all.filter((c) => c.Mounts.some((m) => m.Source === sharedDir));
}

describe('SlimeTrainerBackend (epoch containers, reference image)', () => {
  let root: string;
  let baseModel: string;
  let sharedDir: string;
  const logs: string[] = [];
  let trainer: SlimeTrainerBackend;

  beforeAll(async () => {
    await docker
      .getImage(IMAGE)
      .inspect()
      .catch(() => {
        throw new Error(
          `image ${IMAGE} is missing: build it with docker compose build engine (engine/Dockerfile)`,
        );
      });
    root = mkdtempSync(join(tmpdir(), 'slime-trainer-'));
    baseModel = join(root, 'base-model');
    sharedDir = join(root, 'shared');
    execFileSync('.venv/bin/python', ['-m', 'openclaw_engine', 'make-tiny-model', baseModel], {
      stdio: 'ignore',
    });
    trainer = new SlimeTrainerBackend({
      image: IMAGE,
      sharedDir,
      baseModel,
      gpus: 0,
      // The image's engine may predate `train-epoch`: run this checkout's engine code in it.
      binds: [`${ENGINE_SOURCE}:/opt/engine/openclaw_engine:ro`],
      onLog: (line) => logs.push(line),
    });
  });

  afterAll(async () => {
    for (const c of await epochContainers(sharedDir ?? '/nonexistent'))
      await docker.getContainer(c.Id).remove({ force: true });
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('trains two steps into two checkpoints, never twice for one step id, and leaves no container', async () => {
    const first = await trainer.trainStep(
      'run:1',
      [sample(1, [7, 8, 9]), sample(-1, [10, 11])],
      grpo,
      optimizer,
    );
    const ckpt1 = await trainer.currentCheckpoint();
    const second = await trainer.trainStep('run:2', [sample(1, [12, 13])], grpo, optimizer);
    const ckpt2 = await trainer.currentCheckpoint();
    console.log('epoch timing (s):', {
      first: pick(first, ['epoch_process_start_s', 'epoch_startup_s', 'epoch_train_s', 'epoch_container_s']),
      second: pick(second, [
        'epoch_process_start_s',
        'epoch_startup_s',
        'epoch_train_s',
        'epoch_container_s',
      ]),
    });

    expect(first.duplicate).toBe(false);
    expect(first.tokens).toBe(5);
    expect(first.step).toBe(1);
    expect(second.step).toBe(2);
    expect(ckpt1).not.toBe(ckpt2);
    expect(existsSync(join(ckpt1 ?? '', 'config.json'))).toBe(true);
    expect(existsSync(join(ckpt2 ?? '', 'trainer_state', 'state.json'))).toBe(true);
    // The second checkpoint resumed from the first: it records both steps.
    const state = JSON.parse(readFileSync(join(ckpt2 ?? '', 'trainer_state', 'state.json'), 'utf8'));
    expect(Object.keys(state.steps)).toEqual(['run:1', 'run:2']);
    // The trained weights differ from the base.
    expect(
      readFileSync(join(ckpt2 ?? '', 'model.safetensors')).equals(
        readFileSync(join(baseModel, 'model.safetensors')),
      ),
    ).toBe(false);
    expect(logs.some((l) => l.includes('"event": "ready"'))).toBe(true);

    // A repeated step id: recorded metrics, no container, checkpoint unchanged.
    const again = await trainer.trainStep(
      'run:1',
      [sample(1, [7, 8, 9]), sample(-1, [10, 11])],
      grpo,
      optimizer,
    );
    expect(again.duplicate).toBe(true);
    expect(again.loss).toBe(first.loss);
    expect(await trainer.currentCheckpoint()).toBe(ckpt2);
    expect(await trainer.hasApplied('run:2')).toBe(true);
    expect(await trainer.hasApplied('run:3')).toBe(false);

    // Publishing: a servable copy of the current checkpoint.
    const exported = await trainer.exportForServing(join(root, 'served', 'v2'));
    expect(existsSync(join(exported, 'model.safetensors'))).toBe(true);
    expect(await epochContainers(sharedDir)).toEqual([]);
  }, 100_000);

  it('fails retryably when the container is killed mid-epoch, and the retry trains the step', async () => {
    const before = await trainer.currentCheckpoint();
    const attempt = trainer.trainStep('run:3', [sample(1, [14, 15])], grpo, optimizer);
    const settled = attempt.then(
      () => undefined,
      (error: unknown) => error,
    );
    // Kill as soon as the container runs (it is loading the model then: a few seconds).
    let killed = false;
    for (let i = 0; i < 200 && !killed; i++) {
      const running = (await epochContainers(sharedDir)).find((c) => c.State === 'running');
      if (running) {
        await docker.getContainer(running.Id).kill();
        killed = true;
      } else await new Promise((r) => setTimeout(r, 100));
    }
    expect(killed).toBe(true);
    const error = (await settled) as { type?: string; nonRetryable?: boolean; message?: string };
    expect(error?.type).toBe('TrainerEpochFailed');
    expect(error?.nonRetryable).toBe(false);
    expect(error?.message).toMatch(/exited with 137/);
    expect(await trainer.currentCheckpoint()).toBe(before);
    expect(await trainer.hasApplied('run:3')).toBe(false);
    expect(await epochContainers(sharedDir)).toEqual([]);

    const retry = await trainer.trainStep('run:3', [sample(1, [14, 15])], grpo, optimizer);
    expect(retry.duplicate).toBe(false);
    expect(retry.step).toBe(3);
    expect(await trainer.hasApplied('run:3')).toBe(true);
    expect(await epochContainers(sharedDir)).toEqual([]);
    // Three steps trained: the two newest checkpoints are kept, the batch files are gone.
    expect(readdirSync(join(sharedDir, 'checkpoints')).filter((e) => !e.startsWith('.'))).toHaveLength(2);
    expect(readdirSync(join(sharedDir, 'batches'))).toEqual([]);
  }, 80_000);

  it('in an activity: heartbeats with the log lines, and cancelling stops and removes the container', async () => {
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 3_000 });
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (detail: unknown) => {
      heartbeats.push(detail);
      // Cancel once the container has printed that it started (it is loading the model then).
      if (typeof detail === 'string' && detail.includes('"started"')) env.cancel();
    });
    const before = await trainer.currentCheckpoint();
    const outcome = await env
      .run(() => trainer.trainStep('run:4', [sample(1, [16, 17])], grpo, optimizer))
      .then(
        () => 'trained',
        (error: unknown) => error,
      );
    expect(outcome).toBeInstanceOf(CancelledFailure);
    expect(heartbeats.some((d) => typeof d === 'string' && d.startsWith('epoch run:4: '))).toBe(true);
    expect(await trainer.currentCheckpoint()).toBe(before);
    expect(await trainer.hasApplied('run:4')).toBe(false);
    expect(await epochContainers(sharedDir)).toEqual([]);
  }, 60_000);

  it('a trainer on a fresh shared folder resumes from an exported checkpoint (copied in)', async () => {
    const exported = await trainer.exportForServing(join(root, 'served', 'v3'));
    const fresh = new SlimeTrainerBackend({ image: IMAGE, sharedDir: join(root, 'fresh'), baseModel });
    expect(await fresh.hasApplied('run:3')).toBe(false);
    await fresh.loadCheckpoint(exported);
    const current = await fresh.currentCheckpoint();
    expect(current?.startsWith(join(root, 'fresh', 'checkpoints', 'imported-'))).toBe(true);
    expect(await fresh.hasApplied('run:3')).toBe(true);
    const again = await fresh.trainStep('run:3', [sample(1, [14, 15])], grpo, optimizer);
    expect(again.duplicate).toBe(true);
    await expect(fresh.loadCheckpoint(baseModel)).rejects.toThrow(/not a trainer checkpoint/);
  });
});

describeTrainerBackendContract(
  'slime (epoch containers, reference image)',
  async () => {
    await docker.getImage(IMAGE).inspect();
    const root = mkdtempSync(join(tmpdir(), 'slime-contract-'));
    const sharedDir = join(root, 'shared');
    const trainer = new SlimeTrainerBackend({
      image: IMAGE,
      sharedDir,
      baseModel: await makeTinyModel(join(root, 'base-model')),
      gpus: 0,
      binds: [`${ENGINE_SOURCE}:/opt/engine/openclaw_engine:ro`],
      onLog: () => undefined,
    });
    return {
      trainer,
      dir: join(root, 'out'),
      // A Hugging Face model folder, which every engine kind loads, without slime's own checkpoint.
      async expectServable(path) {
        expect(existsSync(join(path, 'config.json'))).toBe(true);
        expect(existsSync(join(path, 'model.safetensors'))).toBe(true);
        expect(existsSync(join(path, SLIME_RAW_CHECKPOINT))).toBe(false);
      },
      async close() {
        for (const c of await epochContainers(sharedDir))
          await docker.getContainer(c.Id).remove({ force: true });
        rmSync(root, { recursive: true, force: true });
      },
    };
  },
  240_000,
);

function pick(metrics: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k, metrics[k]]));
}
