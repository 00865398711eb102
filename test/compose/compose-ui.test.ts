// The compose stack's Temporal Web UI (docker-compose.local.yml: the UI server built from the Go module proxy) as
// a person uses it, in a real browser: the Start Workflow form starts a training run on the compose Temporal
// server, the control worker runs it (its status query answers), and the UI shows the run's input decrypted
// through compose's codec server (payloads are encrypted). Only the services that path needs are started:
// Temporal on PostgreSQL, the UI, the codec server and the control worker (without the engine: nothing here
// trains). Runs with the compose suite (vitest.compose.config.ts, `npm run test:compose`).

import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PayloadEncryptionPlugin } from '../../security/payload-encryption.js';
import { readPayloadKeyFile } from '../../security/payload-keys.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { type TrainingRunStatus, trainingStatusQuery } from '../../workflows/training-signals.js';
import { freePort } from '../support/cli-process.js';
import {
  launchBrowser,
  newUiPage,
  openWorkflowPage,
  screenshot,
  startWorkflowInUi,
} from '../support/temporal-ui-browser.js';
import { composeCommand } from './compose-command.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const COMPOSE_FILES = ['-f', 'docker-compose.yml', '-f', 'docker-compose.local.yml'];

describe('the compose Temporal UI (local images)', () => {
  let compose: string[];
  let env: NodeJS.ProcessEnv;
  let dir: string;
  let ports: { temporal: number; ui: number; codec: number };
  let connection: Connection | undefined;
  let browser: Browser | undefined;

  const composeRun = async (args: string[], timeoutMs = 60_000) => {
    const [command, ...prefix] = compose;
    return run(command as string, [...prefix, ...COMPOSE_FILES, ...args], {
      cwd: ROOT,
      env,
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
  };

  beforeAll(async () => {
    compose = await composeCommand();
    const cas = await readdir('/usr/local/share/ca-certificates').catch(() => [] as string[]);
    for (const name of cas.filter((n) => n.endsWith('.crt')))
      await cp(join('/usr/local/share/ca-certificates', name), join(ROOT, 'docker/ca-certificates', name));
    await run('bash', [join(ROOT, 'docker/base-image.sh')], { timeout: 15 * 60_000 });
    // The local images copy the server's and the UI server's binaries built from the Go module proxy.
    await run('bash', ['scripts/temporal-server.sh', 'build'], { cwd: ROOT, timeout: 30 * 60_000 });
    await run('bash', ['scripts/temporal-ui-server.sh', 'build'], { cwd: ROOT, timeout: 30 * 60_000 });
    dir = await mkdtemp(join(tmpdir(), 'compose-ui-'));
    ports = { temporal: await freePort(), ui: await freePort(), codec: await freePort() };
    env = {
      ...process.env,
      COMPOSE_PROJECT_NAME: `openclaw-ui-${process.pid}`,
      TEMPORAL_PORT: String(ports.temporal),
      TEMPORAL_UI_PORT: String(ports.ui),
      CODEC_PORT: String(ports.codec),
    };
    const started = Date.now();
    await composeRun(['build', 'postgresql', 'temporal', 'temporal-ui', 'data-init'], 40 * 60_000);
    // The UI starts once Temporal is healthy (its depends_on); then wait until it serves.
    await composeRun(['up', '-d', 'temporal-ui', 'codec-server'], 10 * 60_000);
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
    // No engine: the run's first steps (its status) need none.
    await composeRun(['up', '-d', '--no-deps', 'control-worker'], 5 * 60_000);
    console.log(`[compose-ui] up after ${((Date.now() - started) / 1000).toFixed(0)} s`);
    const keyFile = join(dir, 'payload-keys.json');
    await writeFile(
      keyFile,
      (await composeRun(['exec', '-T', 'codec-server', 'cat', '/keys/payload-keys.json'])).stdout,
    );
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
  }, 6 * 60_000);

  it(
    'starts a training run from the Start Workflow form; the run answers its status query and the UI shows its input decrypted',
    async () => {
      if (!connection) throw new Error('no connection');
      const client = new Client({ connection });
      // The UI as the user opens it (the codec server allows the UI's localhost origin).
      const uiUrl = `http://localhost:${ports.ui}`;
      const runId = `ui-compose-${process.pid}-${Date.now().toString(36)}`;
      browser = await launchBrowser();
      const page = await newUiPage(browser);
      expect(
        await startWorkflowInUi(
          page,
          uiUrl,
          {
            workflowId: trainingWorkflowId(runId),
            taskQueue: 'control',
            workflowType: 'trainingWorkflow',
            input: `{"runId": "${runId}"}`,
          },
          { shot: 'compose-start-form' },
        ),
      ).toBe(200);
      const handle = client.workflow.getHandle(trainingWorkflowId(runId));
      const deadline = Date.now() + 120_000;
      let status: TrainingRunStatus | undefined;
      while (!status) {
        status = await handle.query(trainingStatusQuery).catch(() => undefined);
        if (!status && Date.now() > deadline) throw new Error('the run never answered its status query');
        if (!status) await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      expect(status).toMatchObject({ runId, method: 'combine', policyVersion: 0, paused: false });
      expect(status.settings.batchSize).toBe(16);
      const shown = await openWorkflowPage(page, uiUrl, trainingWorkflowId(runId), ['Running', `"${runId}"`]);
      expect(shown).not.toContain('binary/encrypted');
      await screenshot(page, 'compose-run-started');
      await handle.terminate('the test is over');
    },
    5 * 60_000,
  );
});
