import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { LANE_COUNT, laneOf } from './test-lanes.js';

/**
 * `--shard=N/2` picks lane N of test-lanes.ts instead of vitest's hash split, so the files that share Docker or
 * vLLM stay in one lane. Any other shard count splits as vitest does.
 */
export class LaneSequencer extends BaseSequencer {
  override async shard(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { shard, root } = this.ctx.config;
    if (!shard || shard.count !== LANE_COUNT) return super.shard(files);
    return files.filter((file) => laneOf(relative(root, file.moduleId)) === shard.index);
  }
}
