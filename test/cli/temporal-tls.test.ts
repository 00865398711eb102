// The project's clients and workers on a secured Temporal server (test/support/temporal-tls-server.ts: the
// real server with TLS, required client certificates and JWT API keys), configured only through
// @temporalio/envconfig's standard settings: a control worker from TEMPORAL_* variables, `train start` and
// `train status` from a temporal.toml profile (with `--temporal-address` still winning over it), and the
// `temporal` CLI reading the same profile file. Without a client certificate, without an API key, with a
// key for another namespace or without TLS, the server refuses.

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromFlags } from '../../cli/cli-config.js';
import { findTemporalExecutable } from '../../cli/temporal-cli.js';
import {
  connectClient,
  describeTemporalConnection,
  temporalConnectionSettings,
} from '../../temporal/connection.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingStatusQuery } from '../../workflows/training-signals.js';
import { type CliProcess, startCli } from '../support/cli-process.js';
import { testPayloadKeysEnv, uniqueTaskQueue } from '../support/temporal.js';
import { startTlsTemporalServer, type TlsTemporalServer } from '../support/temporal-tls-server.js';

const run = promisify(execFile);
const cliEntry = join(import.meta.dirname, '../../bin/openclaw-rl.mjs');

describe('Temporal over TLS, mTLS and an API key', () => {
  let server: TlsTemporalServer;
  let dir: string;
  let worker: CliProcess;
  let tomlFile: string;
  const taskQueue = uniqueTaskQueue('tls');
  const runId = `tls-${Date.now().toString(36)}`;
  /** What every process gets besides its Temporal settings. */
  let base: NodeJS.ProcessEnv;
  /** The same connection as TEMPORAL_* variables alone. */
  let variables: NodeJS.ProcessEnv;
  /** A temporal.toml profile. */
  let profile: NodeJS.ProcessEnv;

  beforeAll(async () => {
    server = await startTlsTemporalServer();
    dir = await mkdtemp(join(tmpdir(), 'temporal-tls-test-'));
    const apiKey = server.apiKey([`${server.namespace}:write`]);
    base = {
      OPENCLAW_DATA_DIR: join(dir, 'data'),
      OPENCLAW_CONTROL_TASK_QUEUE: taskQueue,
      // The run's payload key ring, for the in-process configs too.
      ...testPayloadKeysEnv(),
    };
    variables = {
      ...base,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
      TEMPORAL_API_KEY: apiKey,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: server.serverCaPath,
      TEMPORAL_TLS_CLIENT_CERT_PATH: server.clientCertPath,
      TEMPORAL_TLS_CLIENT_KEY_PATH: server.clientKeyPath,
      TEMPORAL_TLS_SERVER_NAME: server.serverName,
    };
    tomlFile = join(dir, 'temporal.toml');
    const tls = [
      `server_ca_cert_path = "${server.serverCaPath}"`,
      `client_cert_path = "${server.clientCertPath}"`,
      `client_key_path = "${server.clientKeyPath}"`,
      `server_name = "${server.serverName}"`,
    ].join('\n');
    await writeFile(
      tomlFile,
      [
        '[profile.secure]',
        `address = "${server.address}"`,
        `namespace = "${server.namespace}"`,
        `api_key = "${apiKey}"`,
        '[profile.secure.tls]',
        tls,
        '',
        '# The same, with an address nothing answers on: --temporal-address must win over it.',
        '[profile.stale]',
        'address = "127.0.0.1:9"',
        `namespace = "${server.namespace}"`,
        `api_key = "${apiKey}"`,
        '[profile.stale.tls]',
        tls,
        '',
      ].join('\n'),
    );
    profile = { ...base, TEMPORAL_CONFIG_FILE: tomlFile, TEMPORAL_PROFILE: 'secure' };
    worker = startCli('worker', ['worker', 'control'], variables, join(dir, 'worker.log'));
    await worker.waitForLine(/^control worker on task queue /, 90_000);
  }, 300_000);

  afterAll(async () => {
    await worker?.stop();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const cli = (args: string[], env: NodeJS.ProcessEnv) =>
    run(process.execPath, [cliEntry, ...args], { env: { ...process.env, ...env }, timeout: 90_000 });

  it('says how the worker is connected: mTLS, an API key, payloads encrypted', async () => {
    await worker.waitForLine(
      new RegExp(`^temporal ${server.address} namespace default \\(mTLS, API key\\); payloads encrypted`),
      1_000,
    );
  });

  it('starts and reads a run through a temporal.toml profile, the flag overriding its address', async () => {
    const started = await cli(
      ['train', 'start', '--run', runId, '--json', '--temporal-address', server.address],
      { ...profile, TEMPORAL_PROFILE: 'stale' },
    );
    expect(JSON.parse(started.stdout)).toMatchObject({
      started: true,
      workflowId: trainingWorkflowId(runId),
    });
    // The status query is answered by the worker, which connected through the variables.
    const status = await cli(['train', 'status', '--run', runId, '--json'], profile);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId, policyVersion: 0, stepsCompleted: 0 });

    const config = configFromFlags({}, profile);
    expect(config.temporal.address).toBe(server.address);
    const settings = temporalConnectionSettings(config, profile);
    expect(describeTemporalConnection(settings)).toMatch(/\(mTLS, API key\); payloads encrypted/);
    const { client, close } = await connectClient(config, profile);
    try {
      const state = await client.workflow.getHandle(trainingWorkflowId(runId)).query(trainingStatusQuery);
      expect(state.runId).toBe(runId);
    } finally {
      await close();
    }
  });

  it('reads the same profile file with the temporal CLI, and stores only encrypted payloads', async () => {
    const temporal = findTemporalExecutable();
    if (temporal.type !== 'existing-path')
      throw new Error('the temporal CLI is not installed (npm run setup)');
    const { stdout } = await run(temporal.path, [
      'workflow',
      'show',
      '--workflow-id',
      trainingWorkflowId(runId),
      '--config-file',
      tomlFile,
      '--profile',
      'secure',
      '--output',
      'json',
    ]);
    type Started = { input: { payloads: { metadata: Record<string, string> }[] } };
    const history = JSON.parse(stdout) as { events: { workflowExecutionStartedEventAttributes?: Started }[] };
    const input = history.events[0]?.workflowExecutionStartedEventAttributes?.input.payloads[0];
    expect(Buffer.from(input?.metadata.encoding ?? '', 'base64').toString()).toBe('binary/encrypted');
  });

  const tlsFiles = async () => ({
    serverNameOverride: server.serverName,
    serverRootCACertificate: await readFile(server.serverCaPath),
    clientCertPair: { crt: await readFile(server.clientCertPath), key: await readFile(server.clientKeyPath) },
  });

  it('refuses a client without a certificate, without an API key, with another namespace or without TLS', async () => {
    const { TEMPORAL_TLS_CLIENT_CERT_PATH: _cert, TEMPORAL_TLS_CLIENT_KEY_PATH: _key, ...noCert } = variables;
    await expect(connectClient(configFromFlags({}, noCert), noCert)).rejects.toThrow();

    const { TEMPORAL_API_KEY: _apiKey, ...noKey } = variables;
    const keyless = await connectClient(configFromFlags({}, noKey), noKey);
    try {
      const refused = await keyless.client.workflow
        .getHandle(trainingWorkflowId(runId))
        .describe()
        .catch((error: Error & { cause?: Error }) => error);
      expect((refused as Error & { cause?: Error }).cause?.message).toMatch(/Request unauthorized/);
    } finally {
      await keyless.close();
    }

    const elsewhere = await Connection.connect({
      address: server.address,
      tls: await tlsFiles(),
      apiKey: server.apiKey(['another-namespace:admin']),
    });
    try {
      await expect(
        elsewhere.workflowService.describeWorkflowExecution({
          namespace: server.namespace,
          execution: { workflowId: trainingWorkflowId(runId) },
        }),
      ).rejects.toThrow(/Request unauthorized/);
    } finally {
      await elsewhere.close();
    }

    await expect(
      Connection.connect({
        address: server.address,
        apiKey: server.apiKey([`${server.namespace}:write`]),
        tls: false,
        connectTimeout: 3_000,
      }),
    ).rejects.toThrow();
  });
});
