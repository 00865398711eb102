// The compose stack's Temporal Web UI (docker-compose.local.yml: the UI server built from the Go module proxy) as
// a person uses it, in a real browser, until a step trains: the Start Workflow form starts the run the compose
// gateway feeds (`training-default`, with the documented `{"runId": "default", "settings": {"batchSize": 1}}`),
// the run answers its status query and the UI shows its input decrypted through compose's codec server
// (payloads are encrypted); one turn through the gateway (its API key), rated through `POST /v1/feedback`,
// trains and publishes version 1, and the run's page shows `trainStep`. What goes wrong without it: a run
// started from the compose UI could start and never train. Only what that path needs is started: PostgreSQL,
// Temporal, the UI, the codec server, the engine (which also trains, as the reference trainer), the frozen
// judge engine, the gateway and the control worker. Runs with the compose suite (vitest.compose.config.ts,
// `npm run test:compose`).

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import OpenAI from 'openai';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseApiKeysFile } from '../../security/api-keys.js';
import { PayloadEncryptionPlugin } from '../../security/payload-encryption.js';
import { readPayloadKeyFile } from '../../security/payload-keys.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingStatusQuery } from '../../workflows/training-signals.js';
import { freePort } from '../support/cli-process.js';
import {
  launchBrowser,
  newUiPage,
  openWorkflowPage,
  screenshot,
  startWorkflowInUi,
} from '../support/temporal-ui-browser.js';
import { composeCommand, composeRunner, prepareLocalImageBase, ROOT } from './compose-command.js';

const run = promisify(execFile);
const COMPOSE_FILES = ['-f', 'docker-compose.yml', '-f', 'docker-compose.local.yml'];
// compose's configured run (OPENCLAW_RUN_ID's default): the one its gateway feeds.
const RUN_ID = 'default';

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

describe('the compose Temporal UI (local images)', () => {
  let compose: string[];
  let env: NodeJS.ProcessEnv;
  let dir: string;
  let ports: { temporal: number; ui: number; codec: number; gateway: number; engine: number };
  let apiKey: string;
  let connection: Connection | undefined;
  let browser: Browser | undefined;
  const started = Date.now();

  const composeRun = composeRunner(
    () => compose,
    COMPOSE_FILES,
    () => env,
  );

  beforeAll(async () => {
    compose = await composeCommand();
    await prepareLocalImageBase();
    // The local images copy the server's and the UI server's binaries built from the Go module proxy.
    await run('bash', ['scripts/temporal-server.sh', 'build'], { cwd: ROOT, timeout: 30 * 60_000 });
    await run('bash', ['scripts/temporal-ui-server.sh', 'build'], { cwd: ROOT, timeout: 30 * 60_000 });
    dir = await mkdtemp(join(tmpdir(), 'compose-ui-'));
    ports = {
      temporal: await freePort(),
      ui: await freePort(),
      codec: await freePort(),
      gateway: await freePort(),
      engine: await freePort(),
    };
    env = {
      ...process.env,
      COMPOSE_PROJECT_NAME: `openclaw-ui-${process.pid}`,
      TEMPORAL_PORT: String(ports.temporal),
      TEMPORAL_UI_PORT: String(ports.ui),
      CODEC_PORT: String(ports.codec),
      GATEWAY_PORT: String(ports.gateway),
      ENGINE_PORT: String(ports.engine),
    };
    await composeRun(['build', 'postgresql', 'temporal', 'temporal-ui', 'data-init', 'engine'], 40 * 60_000);
    // The UI starts once Temporal is healthy (its depends_on); then wait until it serves.
    // The services a trained step needs come up beside it: the engine (serving and, with the reference engine,
    // training), the frozen judge engine (judge votes, teacher log-probs), the gateway and the control worker.
    await composeRun(
      ['up', '-d', 'temporal-ui', 'codec-server', 'engine', 'judge-engine', 'gateway', 'control-worker'],
      10 * 60_000,
    );
    const deadline = Date.now() + 5 * 60_000;
    while (
      !(await fetch(`http://127.0.0.1:${ports.ui}/`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (Date.now() > deadline) throw new Error('the Temporal UI never answered');
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    console.log(`[compose-ui] up after ${((Date.now() - started) / 1000).toFixed(0)} s`);
    const keyFile = join(dir, 'payload-keys.json');
    await writeFile(
      keyFile,
      (await composeRun(['exec', '-T', 'codec-server', 'cat', '/keys/payload-keys.json'])).stdout,
    );
    // The gateway's API key, as the README tells a compose user to read it.
    apiKey =
      parseApiKeysFile((await composeRun(['exec', '-T', 'gateway', 'cat', '/keys/api-keys'])).stdout)[0]
        ?.key ?? '';
    connection = await Connection.connect({
      address: `127.0.0.1:${ports.temporal}`,
      plugins: [new PayloadEncryptionPlugin(readPayloadKeyFile(keyFile))],
    });
  }, 60 * 60_000);

  afterAll(async () => {
    await browser?.close();
    await connection?.close();
    if (compose && env) {
      const logs = await composeRun(['logs', '--no-color', '--tail', '30']).catch((e: Error) => ({
        stdout: e.message,
      }));
      console.log(logs.stdout);
      await composeRun(['down', '-v', '--remove-orphans'], 5 * 60_000).catch((error: Error) =>
        console.error(`compose down failed: ${error.message}`),
      );
    }
    if (dir) await rm(dir, { recursive: true, force: true });
    console.log(`[compose-ui] file ran ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }, 6 * 60_000);

  it(
    "starts the gateway's run from the Start Workflow form; it shows its input decrypted, and a rated turn trains version 1",
    async () => {
      if (!connection) throw new Error('no connection');
      const client = new Client({ connection });
      const handle = client.workflow.getHandle(trainingWorkflowId(RUN_ID));
      // The control worker starts the run itself when the first scored sample arrives; should it already run,
      // stop it, so the run that trains is the one started from the UI (docs/temporal-ui.md).
      const running = await handle.describe().then(
        (d) => d.status.name === 'RUNNING',
        (error: Error) => {
          if (error instanceof WorkflowNotFoundError) return false;
          throw error;
        },
      );
      if (running) await handle.terminate('started again from the Temporal UI');

      // The UI as the user opens it (the codec server allows the UI's localhost origin), with the input
      // docs/temporal-ui.md shows for a step to train quickly.
      const uiUrl = `http://localhost:${ports.ui}`;
      browser = await launchBrowser();
      const page = await newUiPage(browser);
      expect(
        await startWorkflowInUi(
          page,
          uiUrl,
          {
            workflowId: trainingWorkflowId(RUN_ID),
            taskQueue: 'control',
            workflowType: 'trainingWorkflow',
            input: `{"runId": "${RUN_ID}", "settings": {"batchSize": 1}}`,
          },
          { shot: 'compose-start-form' },
        ),
      ).toBe(200);
      const status = await until('the status query', () => handle.query(trainingStatusQuery), 120_000);
      expect(status).toMatchObject({ runId: RUN_ID, method: 'combine', policyVersion: 0, paused: false });
      expect(status.settings.batchSize).toBe(1);
      const shown = await openWorkflowPage(page, uiUrl, trainingWorkflowId(RUN_ID), [
        'Running',
        `"${RUN_ID}"`,
        'batchSize',
      ]);
      expect(shown).not.toContain('binary/encrypted');
      await screenshot(page, 'compose-run-started');

      // A turn for a session of its own through the compose gateway, with its API key, then rated.
      const gatewayUrl = `http://127.0.0.1:${ports.gateway}`;
      const openai = new OpenAI({ baseURL: `${gatewayUrl}/v1`, apiKey, maxRetries: 0 });
      const reply = (await openai.chat.completions.create(
        { model: 'default', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 8 },
        { headers: { 'X-Session-Id': `ui-compose-${process.pid}-${Date.now().toString(36)}` } },
      )) as OpenAI.Chat.ChatCompletion & { turn_id?: string };
      expect(reply.turn_id).toBeDefined();
      const rated = await fetch(`${gatewayUrl}/v1/feedback`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ turn_id: reply.turn_id, rating: 1 }),
      });
      expect(rated.status).toBe(200);
      const rateAt = Date.now();
      const trained = await until(
        'the run to report version 1',
        async () => {
          const now = await handle.query(trainingStatusQuery);
          return now.policyVersion >= 1 ? now : undefined;
        },
        240_000,
      );
      console.log(
        `[compose-ui] version 1 published ${((Date.now() - rateAt) / 1000).toFixed(0)} s after the rating`,
      );
      expect(trained).toMatchObject({ runId: RUN_ID, stepsCompleted: 1, samplesTrained: 1 });
      await openWorkflowPage(page, uiUrl, trainingWorkflowId(RUN_ID), ['Running', 'trainStep']);
      await screenshot(page, 'compose-run-trained');
      await handle.terminate('the test is over');
    },
    8 * 60_000,
  );
});
