// Event files written by store/tensorboard-events.ts, read back by the real TensorBoard package's
// EventAccumulator (the .venv's `tensorboard`): the scalars, steps and wall times must come back as written.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { crc32c, writeRunScalars } from '../../store/tensorboard-events.js';

const python = fileURLToPath(new URL('../../.venv/bin/python', import.meta.url));

const READ_BACK = `
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
acc.Reload()
out = {tag: [[e.step, e.value, e.wall_time] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
print(json.dumps(out))
`;

describe('TensorBoard event files', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('computes CRC32C (Castagnoli) as the format needs', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });

  it('appends scalars that TensorBoard reads back by tag and step', async () => {
    const logDir = await mkdtemp(join(tmpdir(), 'tensorboard-'));
    dirs.push(logDir);
    await writeRunScalars(logDir, 'run-a', 1, { loss: 0.75, 'reward/mean': -0.5 }, 1_700_000_000.25);
    await writeRunScalars(logDir, 'run-a', 2, { loss: 0.5, 'reward/mean': 0.125 }, 1_700_000_060.5);
    await writeRunScalars(logDir, 'run-a', 300, { loss: 0.0625, 'timing/step_seconds': 12.5 }, 1_700_003_600);
    await writeRunScalars(logDir, 'run-b~alice', 1, { loss: 2 }, 1_700_000_001);

    const files = await readdir(join(logDir, 'run-a'));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^events\.out\.tfevents\.1700000000\./);

    expect(existsSync(python)).toBe(true);
    const read = (run: string) => {
      const result = spawnSync(python, ['-c', READ_BACK, join(logDir, run)], { encoding: 'utf8' });
      expect(result.status, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as Record<string, Array<[number, number, number]>>;
    };
    expect(read('run-a')).toEqual({
      loss: [
        [1, 0.75, 1_700_000_000.25],
        [2, 0.5, 1_700_000_060.5],
        [300, 0.0625, 1_700_003_600],
      ],
      'reward/mean': [
        [1, -0.5, 1_700_000_000.25],
        [2, 0.125, 1_700_000_060.5],
      ],
      'timing/step_seconds': [[300, 12.5, 1_700_003_600]],
    });
    expect(read('run-b~alice')).toEqual({ loss: [[1, 2, 1_700_000_001]] });
  });

  it('refuses a run id that would leave the log folder', async () => {
    await expect(writeRunScalars('/tmp/telemetry-never', '../x', 1, { loss: 1 }, 1)).rejects.toThrow();
    await expect(writeRunScalars('/tmp/telemetry-never', '..', 1, { loss: 1 }, 1)).rejects.toThrow();
  });
});
