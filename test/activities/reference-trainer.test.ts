// The reference trainer backend: the trainer backend contract against a real reference engine process started
// with `--trainer`; an export is published into that same engine, which serves it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { adapterFolder } from '../../activities/training-activities.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import { makeTinyModel, startReferenceEngine } from '../../engines/reference-engine-process.js';
import { engineModelsOf } from '../../gateway/tenant-routing.js';
import { describeTrainerBackendContract } from '../contracts/trainer-backend-contract.js';

describeTrainerBackendContract('reference (a real engine process)', async () => {
  // The engine writes checkpoints only inside its checkpoint root, the folder holding the model.
  const dir = await mkdtemp(join(tmpdir(), 'reference-trainer-'));
  const engine = await startReferenceEngine({
    model: await makeTinyModel(join(dir, 'model')),
    trainer: true,
  });
  const serving = new ReferenceAdapter(engine.url);
  return {
    trainer: new ReferenceTrainerBackend(engine.url),
    dir,
    async expectServable(path) {
      await serving.publishWeights({ path, version: 'exported' });
      expect(await serving.weightVersion()).toBe('exported');
    },
    async close() {
      await engine.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

// A tenant's adapter trains on the same engine's `/adapters/<tenant>/` routes, through the same backend: the
// contract holds there too, and its export is an adapter folder the engine serves under the tenant's name.
describeTrainerBackendContract("reference, a tenant's adapter (a real engine process)", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'reference-adapter-trainer-'));
  const engine = await startReferenceEngine({
    model: await makeTinyModel(join(dir, 'model')),
    trainer: true,
    adapterRank: 4,
    maxLoras: 2,
  });
  const serving = new ReferenceAdapter(engine.url);
  return {
    trainer: new ReferenceTrainerBackend(`${engine.url}/adapters/alice`),
    dir,
    async expectServable(path) {
      await serving.loadLoraAdapter({ name: 'alice', path: adapterFolder(path), version: '7' });
      const models = engineModelsOf(await serving.listModels());
      expect(models.adapters.get('alice')).toBe(adapterFolder(path));
    },
    async close() {
      await engine.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('per-sample loss weights on the real reference trainer', () => {
  it("a tenant's weight scales its samples' share of the loss; weight 0 for all is refused", async () => {
    // Group training weighs a tenant's samples: the engine must take them, and refuse a step that trains nothing.
    const dir = await mkdtemp(join(tmpdir(), 'reference-weights-'));
    const engine = await startReferenceEngine({
      model: await makeTinyModel(join(dir, 'model')),
      trainer: true,
    });
    try {
      const trainer = new ReferenceTrainerBackend(engine.url);
      const loss = { ...defaultLossConfig, method: 'grpo' as const };
      const sample = {
        tokens: [11, 12, 13, 21, 22, 23],
        responseLength: 3,
        lossMask: [1, 1, 1],
        rolloutLogProbs: [-1, -2, -0.5],
        reward: 1,
      };
      const metrics = await trainer.trainStep(
        'weights:1',
        [
          { ...sample, weight: 2 },
          { ...sample, reward: -1, weight: 0.5 },
        ],
        loss,
        defaultOptimizerConfig,
      );
      expect(Number.isFinite(metrics.loss)).toBe(true);
      const refused = await trainer
        .trainStep('weights:2', [{ ...sample, weight: 0 }], loss, defaultOptimizerConfig)
        .catch((error: unknown) => error);
      expect(String((refused as Error).message)).toMatch(/weight/);
    } finally {
      await engine.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
