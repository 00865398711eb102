// The compose smoke test: what a new user does with `docker compose up`, on this machine's Docker engine.
// Every image is built here (docker-compose.local.yml: a locally made Debian base, the Temporal server built
// from the Go module proxy on the PostgreSQL service in place of the official images), the services come up through their health checks (the first start makes
// the gateway's API key and the payload key ring on the keys volume: the gateway refuses requests without the
// key, Temporal holds only encrypted payloads, the codec server decrypts them for the UI), a training run is
// started with the same JSON a user pastes into the Temporal UI's Start Workflow form, chat turns go through the
// gateway, an epoch completes and the engine serves the next policy version; then the control worker is
// killed (SIGKILL), Docker restarts it, and the run goes on with nothing lost. Last, the gpu profile's
// trainer-worker trains a second run's step in an epoch container (the reference engine's image standing in
// for slime's, on CPU) and loads the result into the engine.
//
// Runs alone (vitest.compose.config.ts, `npm run test:compose`): it builds images and starts a whole stack.

import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTemporalExecutable } from '../../cli/temporal-cli.js';
import { sampleKey } from '../../core/turn-record.js';
import type { TrainingSample } from '../../core/types.js';
import { apiKeyName } from '../../gateway/auth.js';
import { parseApiKeysFile } from '../../security/api-keys.js';
import { isEncrypted } from '../../security/payload-codec.js';
import { PayloadEncryptionPlugin } from '../../security/payload-encryption.js';
import { readPayloadKeyFile } from '../../security/payload-keys.js';
import { PostgresSampleStore } from '../../store/postgres-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { lineageQuery, sampleScoredSignal, trainingStatusQuery } from '../../workflows/training-signals.js';
import { Conversation, type ExpectedOutcome } from '../recovery/conversation.js';
import { type CountContext, fullCount, servedVersion } from '../recovery/recovery-count.js';
import { freePort } from '../support/cli-process.js';
import { codecPreflightOrigin } from '../support/codec-preflight.js';
import { engineCalls } from '../support/engine-calls.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { composeCommand, composeRunner, prepareLocalImageBase, ROOT } from './compose-command.js';

const run = promisify(execFile);
const RUN_ID = 'default';
const BATCH_SIZE = 4; // docs/examples/start-training-run.json
const COMPOSE_FILES = [
  '-f',
  'docker-compose.yml',
  '-f',
  'docker-compose.local.yml',
  '-f',
  'test/compose/docker-compose.smoke.yml',
];

async function waitFor<T>(what: string, probe: () => Promise<T | null>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const value = await probe();
      if (value !== null) return value;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms ${last}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

describe('docker compose up (local images)', () => {
  let compose: string[];
  let env: NodeJS.ProcessEnv;
  let dataDir: string;
  let judge: FakeJudge;
  let client: Client;
  let connection: Connection;
  let ports: {
    gateway: number;
    temporal: number;
    ui: number;
    engine: number;
    postgres: number;
    codec: number;
  };
  /** The gateway's API key, made by data-init on the first start. */
  let apiKey: string;
  /** The engine's token, made there too. */
  let engineToken: string;
  const conversations: Conversation[] = [];

  const composeRun = composeRunner(
    () => compose,
    COMPOSE_FILES,
    () => env,
  );
  const containerOf = async (service: string) => (await composeRun(['ps', '-q', service])).stdout.trim();
  const logs = async () =>
    (await composeRun(['logs', '--no-color', '--tail', '40']).catch((e: Error) => ({ stdout: e.message })))
      .stdout;

  beforeAll(async () => {
    compose = await composeCommand();
    await prepareLocalImageBase();

    judge = await startFakeJudge({ host: '0.0.0.0' });
    dataDir = await mkdtemp(join(tmpdir(), 'compose-smoke-'));
    ports = {
      gateway: await freePort(),
      temporal: await freePort(),
      ui: await freePort(),
      engine: await freePort(),
      postgres: await freePort(),
      codec: await freePort(),
    };
    env = {
      ...process.env,
      COMPOSE_PROJECT_NAME: `openclaw-smoke-${process.pid}`,
      GATEWAY_PORT: String(ports.gateway),
      TEMPORAL_PORT: String(ports.temporal),
      TEMPORAL_UI_PORT: String(ports.ui),
      ENGINE_PORT: String(ports.engine),
      SMOKE_POSTGRES_PORT: String(ports.postgres),
      CODEC_PORT: String(ports.codec),
      SMOKE_JUDGE_URL: `http://host.docker.internal:${new URL(judge.url).port}/v1`,
      SMOKE_DATA_DIR: dataDir,
      DOCKER_GID: String((await stat('/var/run/docker.sock')).gid),
      // The trainer-worker's epoch containers: host paths, mounted at the same paths.
      SLIME_IMAGE: 'openclaw/engine:dev',
      OPENCLAW_TRAINER_EPOCH_COMMAND: 'reference',
      SLIME_GPUS: '0',
      GPU_MODEL_DIR: join(dataDir, 'tiny-model'),
      TRAINER_DIR: join(dataDir, 'trainer'),
    };
    // data-init makes everything under the data folder the services' (uid 1000), this one included.
    await mkdir(join(dataDir, 'trainer'));
    const started = Date.now();
    // The local override's Temporal server image copies the binaries built from the Go module proxy.
    await run('bash', ['scripts/temporal-server.sh', 'build'], { cwd: ROOT, timeout: 30 * 60_000 });
    await composeRun(['build'], 40 * 60_000);
    console.log(`[compose] images built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    await composeRun(['up', '-d'], 10 * 60_000);
    console.log(`[compose] started after ${((Date.now() - started) / 1000).toFixed(0)} s`);
    await waitFor(
      'the gateway is healthy',
      async () =>
        (await fetch(`http://127.0.0.1:${ports.gateway}/healthz`, { signal: AbortSignal.timeout(5000) })).ok
          ? true
          : null,
      5 * 60_000,
    );
    // What a user does to talk to it: read the key the first start made, and the payload keys for a client.
    apiKey =
      parseApiKeysFile((await composeRun(['exec', '-T', 'gateway', 'cat', '/keys/api-keys'])).stdout)[0]
        ?.key ?? '';
    engineToken = (
      await composeRun(['exec', '-T', 'gateway', 'cat', '/engine-keys/engine-token'])
    ).stdout.trim();
    expect(engineToken).toMatch(/^ocrl-engine-/);
    // The engine listens on the compose network: nothing but its health check without the token.
    expect((await fetch(`http://127.0.0.1:${ports.engine}/model_info`)).status).toBe(401);
    const keyFile = join(dataDir, 'payload-keys.json');
    await writeFile(
      keyFile,
      (await composeRun(['exec', '-T', 'gateway', 'cat', '/keys/payload-keys.json'])).stdout,
    );
    connection = await Connection.connect({
      address: `127.0.0.1:${ports.temporal}`,
      plugins: [new PayloadEncryptionPlugin(readPayloadKeyFile(keyFile))],
    });
    client = new Client({ connection });
    console.log(`[compose] up and healthy after ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }, 60 * 60_000);

  afterAll(async () => {
    await shared?.close();
    if (compose && env) {
      console.log(await logs());
      // With the gpu profile named: Compose v2's `down` leaves the trainer-worker up otherwise.
      await composeRun(['--profile', 'gpu', 'down', '-v', '--remove-orphans'], 5 * 60_000).catch(
        (error: Error) => console.error(`compose down failed: ${error.message}`),
      );
    }
    await connection?.close();
    await judge?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }, 6 * 60_000);

  const engine = () =>
    engineCalls(`http://127.0.0.1:${ports.engine}`, { authorization: `Bearer ${engineToken}` });
  const openai = () => new OpenAI({ baseURL: `http://127.0.0.1:${ports.gateway}/v1`, apiKey, maxRetries: 0 });

  /** A session of three turns: thanks → the first is +1, wrong → the second is -1, the last has no next state. */
  async function session(name: string): Promise<void> {
    const conversation = new Conversation(`${name}-${process.pid}`, openai(), store(), apiKeyName(apiKey));
    conversations.push(conversation);
    await conversation.send('Hello, what is the weather like?', { stream: false, maxTokens: 8 });
    await conversation.send('thanks, and tomorrow?', { stream: true, maxTokens: 8 });
    await conversation.send('wrong, try again', { stream: false, maxTokens: 8, done: true });
  }

  /** The stack's store: the compose PostgreSQL's `openclaw` database, published on a port for this test. */
  let shared: PostgresSampleStore | undefined;
  const store = (): PostgresSampleStore => {
    shared ??= new PostgresSampleStore({
      url: `postgres://temporal:temporal@127.0.0.1:${ports.postgres}/openclaw`,
    });
    return shared;
  };

  const ctx = (): CountContext => ({
    client,
    store: store(),
    engine: engine(),
    runId: RUN_ID,
    batchSize: BATCH_SIZE,
  });

  it('runs the Temporal server on PostgreSQL (not the dev server) and serves the model list', async () => {
    const info = await connection.workflowService.getSystemInfo({});
    expect(info.serverVersion).toBe('1.32.2');
    const models = await openai().models.list();
    expect(models.data.length).toBeGreaterThan(0);
  });

  it('made an API key on the first start and refuses requests without it', async () => {
    expect(apiKey).toMatch(/^ocrl-/);
    const { stdout } = await composeRun(['logs', '--no-color', 'data-init']);
    expect(stdout).toMatch(/api keys \/keys\/api-keys \(created with one new key\)/);
    expect(stdout).toMatch(/docker compose exec gateway cat \/keys\/api-keys/);
    expect((await fetch(`http://127.0.0.1:${ports.gateway}/v1/models`)).status).toBe(401);
  });

  it(
    'starts a run with the UI form JSON, trains on chat turns and serves the next version',
    async () => {
      const temporal = findTemporalExecutable();
      if (temporal.type !== 'existing-path')
        throw new Error('the temporal CLI is not installed (scripts/setup.sh)');
      const { stdout } = await run(temporal.path, [
        'workflow',
        'start',
        '--address',
        `127.0.0.1:${ports.temporal}`,
        '--task-queue',
        'control',
        '--type',
        'trainingWorkflow',
        '--workflow-id',
        trainingWorkflowId(RUN_ID),
        '--input-file',
        join(ROOT, 'docs/examples/start-training-run.json'),
      ]);
      expect(stdout).toMatch(/Running execution/);

      await session('smoke-a');
      await session('smoke-b');
      const handle = client.workflow.getHandle(trainingWorkflowId(RUN_ID));
      const version = await waitFor(
        'the run publishes policy version 1',
        async () => {
          const status = await handle.query(trainingStatusQuery);
          return status.policyVersion >= 1 ? status.policyVersion : null;
        },
        5 * 60_000,
      );
      expect(await servedVersion(engine())).toBeGreaterThanOrEqual(version);
    },
    10 * 60_000,
  );

  it("stores the run's input encrypted, and the codec server decrypts it for the UI's origin with its token", async () => {
    const history = await client.workflow.getHandle(trainingWorkflowId(RUN_ID)).fetchHistory();
    const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    // Started by the temporal CLI in plaintext; the first payload the workers wrote is encrypted.
    const written = history.events
      ?.map(
        (event) =>
          event.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0] ??
          event.activityTaskScheduledEventAttributes?.input?.payloads?.[0],
      )
      .find((payload) => payload);
    expect(input && isEncrypted(input)).toBe(false);
    expect(written && isEncrypted(written)).toBe(true);
    const origin = `http://localhost:${ports.ui}`;
    expect(await codecPreflightOrigin(`http://127.0.0.1:${ports.codec}`, origin)).toBe(origin);
    const toJson = (bytes: Uint8Array | null | undefined) =>
      Buffer.from(bytes ?? new Uint8Array()).toString('base64');
    // The UI's endpoint carries the codec token data-init made; without it the server decodes nothing.
    const codecToken = (
      await composeRun(['exec', '-T', 'codec-server', 'cat', '/codec-keys/codec-token'])
    ).stdout.trim();
    const tokenless = await fetch(`http://127.0.0.1:${ports.codec}/decode`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: [] }),
    });
    expect(tokenless.status).toBe(401);
    const decoded = await fetch(`http://127.0.0.1:${ports.codec}/${codecToken}/decode`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json', 'x-namespace': 'default' },
      body: JSON.stringify({
        payloads: [
          {
            metadata: Object.fromEntries(
              Object.entries(written?.metadata ?? {}).map(([k, v]) => [k, toJson(v)]),
            ),
            data: toJson(written?.data),
          },
        ],
      }),
    });
    const { payloads } = (await decoded.json()) as { payloads: { metadata: Record<string, string> }[] };
    expect(Buffer.from(payloads[0]?.metadata.encoding ?? '', 'base64').toString()).toBe('json/plain');
  });

  it(
    'a control worker killed with SIGKILL is restarted by Docker and the run continues with nothing lost',
    async () => {
      const container = await containerOf('control-worker');
      const restartsBefore = Number(
        (await run('docker', ['inspect', '-f', '{{.RestartCount}}', container])).stdout,
      );
      // A crash: the container's main process dies by SIGKILL. (`docker kill` itself counts as a manual stop
      // on Docker 20.10, whose restart policy then leaves the container down; a crash is what restarts cover.)
      const pid = (await run('docker', ['inspect', '-f', '{{.State.Pid}}', container])).stdout.trim();
      process.kill(Number(pid), 'SIGKILL');
      // Turns keep arriving while the worker is down: the gateway records them durably.
      await session('smoke-c');
      await session('smoke-d');
      await waitFor(
        'Docker restarts the control worker',
        async () => {
          const { stdout } = await run('docker', [
            'inspect',
            '-f',
            '{{.State.Running}} {{.RestartCount}}',
            container,
          ]);
          const [running, restarts] = stdout.trim().split(' ');
          return running === 'true' && Number(restarts) > restartsBefore ? true : null;
        },
        2 * 60_000,
      );

      const expected = new Map<string, ExpectedOutcome>();
      for (const c of conversations)
        for (const [id, outcome] of await c.expectations()) expected.set(id, outcome);
      expect(expected.size).toBe(12);
      const result = await fullCount(ctx(), expected, [], () => 'see the compose logs below', 5 * 60_000);
      expect(result.status.policyVersion).toBeGreaterThanOrEqual(2);
      expect(await servedVersion(engine())).toBe(result.status.policyVersion);
    },
    10 * 60_000,
  );

  it(
    'the trainer-worker (gpu profile) trains a run started with trainerTaskQueue in an epoch container',
    async () => {
      await composeRun(['up', '-d', 'trainer-worker'], 5 * 60_000);
      // The GPU host's start JSON, for a second run, fed the first run's real samples.
      const input = JSON.parse(
        await readFile(join(ROOT, 'docs/examples/start-training-run-gpu.json'), 'utf8'),
      ) as { runId: string; settings: Record<string, unknown> };
      expect(input.settings.trainerTaskQueue).toBe('trainer');
      const runId = 'smoke-gpu';
      const handle = await client.workflow.start('trainingWorkflow', {
        workflowId: trainingWorkflowId(runId),
        taskQueue: 'control',
        args: [{ ...input, runId, settings: { ...input.settings, batchSize: 2 } }],
      });
      const [first] = await client.workflow
        .getHandle(trainingWorkflowId(RUN_ID))
        .query(lineageQuery, { version: 1 });
      for (const sampleId of first?.sampleIds.slice(0, 2) ?? []) {
        const sample = await store().get<TrainingSample>(sampleKey(sampleId));
        if (!sample) throw new Error(`sample ${sampleId} is not in the store`);
        await handle.signal(sampleScoredSignal, {
          ok: true,
          sample: {
            sampleId,
            method: sample.method,
            kind: sample.kind,
            policyVersion: sample.policyVersion,
            reward: sample.reward,
            responseLength: sample.responseLength,
          },
        });
      }
      await waitFor(
        "the trainer-worker publishes the second run's version 1",
        async () => ((await handle.query(trainingStatusQuery)).policyVersion >= 1 ? true : null),
        5 * 60_000,
      );
      const [entry] = await handle.query(lineageQuery, { version: 1 });
      // Figures only the slime backend reports: the step ran in an epoch container.
      expect(entry?.metrics.epoch_container_s).toBeGreaterThan(0);
      expect(entry?.checkpoint).toBe(`/data/checkpoints/smoke-gpu/${entry?.incarnation}/v1`);
      expect(
        await stat(join(dataDir, `checkpoints/smoke-gpu/${entry?.incarnation}/v1/config.json`)),
      ).toBeTruthy();
      expect(await servedVersion(engine())).toBe(1);
      const { stdout } = await composeRun(['logs', '--no-color', 'trainer-worker']);
      expect(stdout).toMatch(/trainer worker on task queue trainer .*slime epochs in openclaw\/engine:dev/);
      await handle.terminate('smoke test done');
    },
    10 * 60_000,
  );
});
