// The suite runs in two lanes (scripts/test-lanes.sh): a file named in lane 1 that no longer exists would drop out
// of its lane silently and run beside the Docker tests it was kept apart from.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LANE_ONE, laneOf } from './support/test-lanes.js';

const ROOT = join(import.meta.dirname, '..');

describe('test lanes', () => {
  it('names only files and folders that exist', () => {
    const missing = LANE_ONE.filter((entry) => {
      const path = join(ROOT, entry);
      return entry.endsWith('/') ? !existsSync(path) || !statSync(path).isDirectory() : !existsSync(path);
    });
    expect(missing).toEqual([]);
  });

  it('puts the Docker and vLLM files in lane 1 and the rest in lane 2', () => {
    expect(laneOf('test/sandbox/warm-pool.test.ts')).toBe(1);
    expect(laneOf('test/e2e/track1-vllm.test.ts')).toBe(1);
    expect(laneOf('test/core/config.test.ts')).toBe(2);
    expect(laneOf('test/sandbox-like.test.ts')).toBe(2);
  });
});
