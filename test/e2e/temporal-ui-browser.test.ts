import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import OpenAI from 'openai';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, describe, expect, it } from 'vitest';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingStatusQuery } from '../../workflows/training-signals.js';
import {
  type CliProcess,
  cliTestEnvironment,
  freePort,
  freePortPair,
  startCli,
} from '../support/cli-process.js';
import { engineCalls } from '../support/engine-calls.js';
import { connectTestClient, uniqueTaskQueue } from '../support/temporal.js';
import {
  launchBrowser,
  newUiPage,
  openWorkflowPage,
  screenshot,
  startWorkflowInUi,
} from '../support/temporal-ui-browser.js';

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

// A person starts the training run from `openclaw-rl dev`'s Temporal UI (the dev server dev starts, its codec
// server wired in) with the UI's own form, in a real browser; the gateway's turns then train that run.
describe('a training run started from the Temporal UI', () => {
  let dir: string | undefined;
  let dev: CliProcess | undefined;
  let browser: Browser | undefined;
  let temporal: { client: Client; connection: Connection } | undefined;

  afterAll(async () => {
    await browser?.close();
    await temporal?.connection.close();
    await dev?.stop(30_000);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('starts from the Start Workflow form, shows its input decrypted, trains on a rating; a bad input fails saying what to fix', async () => {
    dir = await mkdtemp(join(tmpdir(), 'temporal-ui-'));
    const suffix = `${process.pid}-${Date.now().toString(36)}`;
    const runId = `ui-run-${suffix}`;
    const taskQueue = uniqueTaskQueue('ui');
    // dev's own Temporal dev server (so it serves the UI), its UI on the port + 1000.
    const temporalPort = await freePortPair(1000);
    const enginePort = await freePortPair(1);
    const engineUrl = `http://127.0.0.1:${enginePort}`;
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
        `127.0.0.1:${temporalPort}`,
        '--run-id',
        runId,
        '--batch-size',
        '1',
      ],
      {
        ...cliTestEnvironment(),
        OPENCLAW_CONTROL_TASK_QUEUE: taskQueue,
        OPENCLAW_CODEC_PORT: String(await freePort()),
      },
      join(dir, 'dev.log'),
    );
    await dev.waitForLine(/^ready$/, 240_000);
    const output = dev.tail(40);
    const uiUrl = /^temporal ui (http:\/\/\S+)$/m.exec(output)?.[1];
    const gatewayUrl = /gateway (http:\/\/\S+)\/v1/.exec(output)?.[1];
    expect(uiUrl, output).toBe(`http://127.0.0.1:${temporalPort + 1000}`);
    expect(output).toMatch(/^codec server http:/m);
    if (!uiUrl || !gatewayUrl) throw new Error(output);

    // dev starts the run its gateway feeds; stop it, so the run that trains is the one started from the UI.
    temporal = await connectTestClient(`127.0.0.1:${temporalPort}`);
    const { client } = temporal;
    const handle = client.workflow.getHandle(trainingWorkflowId(runId));
    await handle.terminate('started again from the Temporal UI');

    browser = await launchBrowser();
    const page: Page = await newUiPage(browser);

    // A bad run id: the run fails, and its failure says which field and what it takes.
    const badId = `training-bad-${suffix}`;
    expect(
      await startWorkflowInUi(
        page,
        uiUrl,
        { workflowId: badId, taskQueue, workflowType: 'trainingWorkflow', input: '{"runId": "bad id!"}' },
        { shot: 'bad-input-form' },
      ),
    ).toBe(200);
    const failure = await client.workflow
      .getHandle(badId)
      .result()
      .then(
        () => null,
        (error: Error & { cause?: Error }) => error.cause?.message ?? error.message,
      );
    expect(failure).toMatch(/^invalid training input: runId: use 1-64 letters, digits/);
    await openWorkflowPage(page, uiUrl, badId, ['Failed', 'invalid training input: runId']);
    await screenshot(page, 'bad-input-failed');

    // The run the gateway feeds, with the smallest batch so one rating trains.
    const input = `{"runId": "${runId}", "settings": {"batchSize": 1}}`;
    expect(
      await startWorkflowInUi(
        page,
        uiUrl,
        { workflowId: trainingWorkflowId(runId), taskQueue, workflowType: 'trainingWorkflow', input },
        { shot: 'start-form' },
      ),
    ).toBe(200);
    const status = await until('the status query', () => handle.query(trainingStatusQuery), 60_000);
    expect(status).toMatchObject({ runId, method: 'combine', policyVersion: 0, stepsCompleted: 0 });
    expect(status.settings.batchSize).toBe(1);
    // Payloads are encrypted: the UI shows the input only through dev's codec server.
    const shown = await openWorkflowPage(page, uiUrl, trainingWorkflowId(runId), [
      'Running',
      runId,
      'batchSize',
    ]);
    expect(shown).not.toContain('binary/encrypted');
    await screenshot(page, 'run-started');

    // A turn for a session of its own, rated: the run trains it and the engine serves version 1.
    const openai = new OpenAI({ baseURL: `${gatewayUrl}/v1`, apiKey: 'none', maxRetries: 0 });
    const reply = (await openai.chat.completions.create(
      { model: 'default', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 8 },
      { headers: { 'X-Session-Id': `ui-chat-${suffix}` } },
    )) as OpenAI.Chat.ChatCompletion & { turn_id?: string };
    expect(reply.turn_id).toBeDefined();
    const rated = await fetch(`${gatewayUrl}/v1/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ turn_id: reply.turn_id, rating: 1 }),
    });
    expect(rated.status).toBe(200);
    await until(
      'version 1 served',
      async () => (Number((await engineCalls(engineUrl).modelInfo()).weight_version) >= 1 ? true : undefined),
      150_000,
    );
    const trained = await until(
      'the run to report version 1',
      async () => {
        const now = await handle.query(trainingStatusQuery);
        return now.policyVersion >= 1 ? now : undefined;
      },
      30_000,
    );
    expect(trained).toMatchObject({ runId, stepsCompleted: 1, samplesTrained: 1 });
    await openWorkflowPage(page, uiUrl, trainingWorkflowId(runId), ['Running', 'trainStep']);
    await screenshot(page, 'run-trained');
  }, 420_000);
});
