// What a published version holds: the Hugging Face folder and the step record, without slime's own checkpoint
// (sharded weights and optimizer state), which only the trainer's shared folder keeps. No Docker needed.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SLIME_RAW_CHECKPOINT,
  SlimeTrainerBackend,
} from '../../activities/trainer-backends/slime-trainer.js';

describe('SlimeTrainerBackend published versions', () => {
  let root: string;
  let trainer: SlimeTrainerBackend;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'slime-export-'));
    const shared = join(root, 'shared');
    const checkpoint = join(shared, 'checkpoints', 'step-1');
    await mkdir(join(checkpoint, 'trainer_state'), { recursive: true });
    await mkdir(join(checkpoint, SLIME_RAW_CHECKPOINT, 'iter_0000001'), { recursive: true });
    await writeFile(join(checkpoint, 'config.json'), '{}');
    await writeFile(join(checkpoint, 'model.safetensors'), 'weights');
    await writeFile(
      join(checkpoint, 'trainer_state', 'state.json'),
      '{"steps": {"run:v1": {"metrics": {}}}}',
    );
    await writeFile(join(checkpoint, SLIME_RAW_CHECKPOINT, 'iter_0000001', 'optimizer.pt'), 'moments');
    await writeFile(join(shared, 'LATEST'), JSON.stringify({ checkpoint }));
    trainer = new SlimeTrainerBackend({ image: 'unused', sharedDir: shared, baseModel: join(root, 'base') });
  });

  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("exports the served weights and the step record, not slime's checkpoint", async () => {
    const served = join(root, 'published', 'v1');
    expect(await trainer.exportForServing(served)).toBe(served);
    expect(existsSync(join(served, 'config.json'))).toBe(true);
    expect(existsSync(join(served, 'model.safetensors'))).toBe(true);
    expect(existsSync(join(served, 'trainer_state', 'state.json'))).toBe(true);
    expect(existsSync(join(served, SLIME_RAW_CHECKPOINT))).toBe(false);
  });

  it('saves everything when asked for a full checkpoint', async () => {
    const saved = join(root, 'saved');
    await trainer.saveCheckpoint(saved);
    expect(existsSync(join(saved, SLIME_RAW_CHECKPOINT, 'iter_0000001', 'optimizer.pt'))).toBe(true);
  });
});
