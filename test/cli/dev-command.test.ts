import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
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

  it('starts a frozen judge engine beside the policy, and with feedback alone (no judge can vote) trains new versions', async () => {
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
        '--batch-size',
        '1',
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

    // A new user rates replies as the README shows (the `openai` package, then curl's request), and the embedded
    // default, whose tiny judge cannot vote, trains on what they said.
    const gatewayUrl = /gateway (http:\/\/\S+)\/v1/.exec(output)?.[1];
    expect(gatewayUrl).toBeDefined();
    const openai = new OpenAI({ baseURL: `${gatewayUrl}/v1`, apiKey: 'none', maxRetries: 0 });
    const reply = (await openai.chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'Hello!' }],
      max_tokens: 8,
    })) as OpenAI.Chat.ChatCompletion & { turn_id?: string };
    expect(reply.turn_id).toMatch(/:1-[0-9a-f]{16}$/);
    await openai.post('/feedback', { body: { turn_id: reply.turn_id, rating: 1 } });
    await openai.chat.completions.create(
      { model: 'default', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 8 },
      { headers: { 'X-Session-Id': 'my-chat' } },
    );
    const curl = await fetch(`${gatewayUrl}/v1/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        session_id: 'my-chat',
        rating: -1,
        correction: 'Greet me back in one short sentence.',
      }),
    });
    expect(curl.status).toBe(200);
    const policy = engineCalls(engineUrl);
    const deadline = Date.now() + 120_000;
    while (Number((await policy.modelInfo()).weight_version) < 2) {
      if (Date.now() > deadline) throw new Error(`no version 2 was served:\n${dev.tail(40)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    // The same versions are in TensorBoard event files under the data folder (their contents: tensorboard-events.test.ts).
    // Lineage is recorded just after publishing, so the file may come a moment after the version.
    const eventsDir = join(dir, 'data', 'tensorboard', `dev-${process.pid}`);
    const hasEvents = async () =>
      (await readdir(eventsDir).catch(() => [] as string[])).some((name) =>
        name.startsWith('events.out.tfevents.'),
      );
    while (!(await hasEvents())) {
      if (Date.now() > deadline + 30_000) throw new Error(`no TensorBoard events in ${eventsDir}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    await dev.stop(30_000);
    expect(await frozen.health()).toBe(false);
  }, 300_000);
});
