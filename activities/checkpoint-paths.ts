// Where a run's published versions live on disk, and what makes a folder a whole published version.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { FIREWORKS_SAMPLER_FILE } from './trainer-backends/fireworks-trainer.js';
import { TINKER_SAMPLER_FILE } from './trainer-backends/tinker-trainer.js';

/** Where a published version's folder lives. */
export function checkpointPath(
  checkpointDir: string,
  runId: string,
  version: number,
  incarnation?: string,
): string {
  return incarnation === undefined
    ? join(checkpointDir, runId, `v${version}`)
    : join(checkpointDir, runId, incarnation, `v${version}`);
}

/**
 * Whether `path` holds a whole published version: a Hugging Face folder, or a Tinker or Fireworks export naming
 * its sampler weights. Both are written atomically, so one that is there is complete.
 */
export function isPublishedVersion(path: string): boolean {
  return (
    existsSync(join(path, 'config.json')) ||
    existsSync(join(path, TINKER_SAMPLER_FILE)) ||
    existsSync(join(path, FIREWORKS_SAMPLER_FILE)) ||
    existsSync(join(adapterFolder(path), 'adapter_config.json'))
  );
}

/** The PEFT adapter folder inside a LoRA checkpoint (the reference trainer's layout, engine/TRAINING.md). */
export function adapterFolder(checkpoint: string): string {
  return join(checkpoint, 'adapter');
}
