// The reference trainer backend: the trainer backend contract against a real reference engine process started
// with `--trainer`; an export is published into that same engine, which serves it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import { makeTinyModel, startReferenceEngine } from '../../engines/reference-engine-process.js';
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
