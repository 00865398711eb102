// publishWeights reloads a version that was saved before a trainer restart instead of training the step again:
// a Hugging Face folder and a Tinker export both count as saved.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TINKER_SAMPLER_FILE } from '../../activities/trainer-backends/tinker-trainer.js';
import { isPublishedVersion } from '../../activities/training-activities.js';

describe('isPublishedVersion', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'published-'));
    for (const name of ['hf', 'tinker', 'half']) await mkdir(join(root, name));
    await writeFile(join(root, 'hf', 'config.json'), '{}');
    await writeFile(join(root, 'tinker', TINKER_SAMPLER_FILE), '{"path": "tinker://run/sampler_weights/v1"}');
    await writeFile(join(root, 'half', 'model.safetensors'), '');
  });
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('accepts Hugging Face folders and Tinker exports, nothing else', () => {
    expect(isPublishedVersion(join(root, 'hf'))).toBe(true);
    expect(isPublishedVersion(join(root, 'tinker'))).toBe(true);
    expect(isPublishedVersion(join(root, 'half'))).toBe(false);
    expect(isPublishedVersion(join(root, 'missing'))).toBe(false);
  });
});
