import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { type CliProcess, freePort, freePortPair, startCli } from '../support/cli-process.js';
import { engineCalls } from '../support/engine-calls.js';
import { uniqueTaskQueue } from '../support/temporal.js';

/** This process's environment without the project's own variables (a user's shell, not the test's). */
function userEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!key.startsWith('OPENCLAW_') && !key.startsWith('TEMPORAL_')) env[key] = value;
  return env;
}

// `openclaw-rl dev` as a new user runs it (against the test run's Temporal server, on free ports): besides the
// policy engine it starts the frozen judge engine on the next port, and judge and teacher point at it.
describe('openclaw-rl dev', () => {
  let dir: string | undefined;
  let dev: CliProcess | undefined;

  afterAll(async () => {
    await dev?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('starts a frozen judge engine beside the policy and judges and teaches with it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dev-command-'));
    const enginePort = await freePortPair(1);
    const engineUrl = `http://127.0.0.1:${enginePort}`;
    const judgeUrl = `http://127.0.0.1:${enginePort + 1}`;
    dev = startCli(
      'dev',
      [
        'dev',
        '--data-dir',
        join(dir, 'data'),
        '--port',
        String(await freePort()),
        '--engine-url',
        engineUrl,
        '--temporal-address',
        inject('temporalAddress'),
        '--run-id',
        `dev-${process.pid}`,
      ],
      { ...userEnvironment(), OPENCLAW_CONTROL_TASK_QUEUE: uniqueTaskQueue('dev') },
      join(dir, 'dev.log'),
    );
    await dev.waitForLine(/^ready$/, 240_000);
    const output = dev.tail(40);
    expect(output).toContain(`judge engine ${judgeUrl} model=${join(dir, 'data', 'tiny-model')} (frozen`);
    expect(output).toContain(`judge ${judgeUrl}/v1 (model default), teacher ${judgeUrl}`);
    const frozen = engineCalls(judgeUrl);
    expect(String((await frozen.modelInfo()).weight_version)).toBe('0');
    // Serving only: it has no trainer, so nothing can ever train or publish to it.
    await expect(frozen.request('GET', '/trainer_info')).rejects.toMatchObject({ status: 404 });
    expect(await engineCalls(engineUrl).request('GET', '/trainer_info')).toMatchObject({
      step_count: 0,
    });

    await dev.stop(30_000);
    expect(await frozen.health()).toBe(false);
  }, 300_000);
});
