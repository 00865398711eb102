// `train rollback --to vN` (docs/evaluation.md#rollback): vN's checkpoint folder becomes version M+1's and is served
// at once. Idempotent: a folder already copied whole is not copied again, and loading a version twice serves it once.
import { existsSync } from 'node:fs';
import { cp, rename, rm } from 'node:fs/promises';
import { ApplicationFailure } from '@temporalio/activity';
import type { EngineAdapter } from '../engines/engine-adapter.js';
import { checkpointPath, isPublishedVersion } from './checkpoint-paths.js';
import { withHeartbeats } from './heartbeats.js';

export interface RollbackInput {
  runId: string;
  incarnation?: string;
  /** The version rolled back to, and its checkpoint folder. */
  from: { version: number; checkpoint: string };
  /** The new version that serves its weights. */
  version: number;
}

export function createRollbackActivities(deps: { serving: EngineAdapter; checkpointDir: string }) {
  return {
    /** Copies vN's folder to the new version's and serves it; the new folder's path. */
    async rollbackTo(input: RollbackInput): Promise<string> {
      return withHeartbeats(`rollback to v${input.from.version}`, async () => {
        const path = checkpointPath(deps.checkpointDir, input.runId, input.version, input.incarnation);
        if (!isPublishedVersion(path)) {
          if (!isPublishedVersion(input.from.checkpoint))
            throw ApplicationFailure.nonRetryable(
              `v${input.from.version}'s checkpoint ${input.from.checkpoint} is no longer on disk: training.keepCheckpoints (OPENCLAW_KEEP_CHECKPOINTS) kept only newer versions`,
              'CheckpointGone',
            );
          // Copied beside, then renamed: a folder at `path` is always whole.
          const staging = `${path}.rollback-tmp`;
          await rm(staging, { recursive: true, force: true });
          await cp(input.from.checkpoint, staging, { recursive: true });
          if (!existsSync(path)) await rename(staging, path);
        }
        await deps.serving.publishWeights({ path, version: String(input.version) });
        return path;
      });
    },
  };
}

export type RollbackActivities = ReturnType<typeof createRollbackActivities>;
