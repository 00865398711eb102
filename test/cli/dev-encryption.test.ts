// `openclaw-rl dev` as a new user runs it, with encryption on by default: it makes a payload key ring in its
// data folder, starts the codec server and a Temporal dev server whose Web UI is told to decode through it.
// Then what the user sees: the UI's settings name the codec endpoint (with the codec token made in the data
// folder), the codec server grants the UI's origin, the `temporal` CLI shows a run's input decrypted only
// through the codec server and only with the token (TEMPORAL_CODEC_AUTH, off its command line), and
// `openclaw-rl train status` reads the run with the key from the data folder (and explains what is missing
// without it). The policy engine here is the scripted test double: these checks need no model.

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTemporalExecutable } from '../../cli/temporal-cli.js';
import { type CliProcess, freePort, freePortPair, startCli } from '../support/cli-process.js';
import { codecPreflightOrigin } from '../support/codec-preflight.js';
import { type ScriptedPolicyServer, startScriptedPolicy } from '../support/scripted-policy-server.js';

const run = promisify(execFile);
type JsonPayload = { metadata: Record<string, string>; data?: string };
const cliEntry = join(import.meta.dirname, '../../bin/openclaw-rl.mjs');

describe('openclaw-rl dev encrypts by default', () => {
  let dir: string;
  let policy: ScriptedPolicyServer;
  let dev: CliProcess;
  let address: string;
  let uiPort: number;
  let codecUrl: string;
  /** The environment of a user who configured nothing: no keys from the test run's own environment. */
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dev-encryption-'));
    policy = await startScriptedPolicy(() => ({ content: 'ok' }));
    const port = await freePortPair(1000);
    address = `127.0.0.1:${port}`;
    uiPort = port + 1000;
    env = {
      OPENCLAW_PAYLOAD_KEYS: '',
      OPENCLAW_PAYLOAD_KEY_ID: '',
      OPENCLAW_DATA_DIR: join(dir, 'data'),
      TEMPORAL_ADDRESS: address,
      OPENCLAW_ENGINE_URL: policy.url,
      // Its own free port: by default the judge engine `dev` starts takes the policy's next one, which another
      // process may hold (the scripted policy's port is any free one).
      OPENCLAW_JUDGE_ENGINE_URL: `http://127.0.0.1:${await freePort()}`,
      OPENCLAW_GATEWAY_PORT: String(await freePort()),
      OPENCLAW_CODEC_PORT: String(await freePort()),
      OPENCLAW_RUN_ID: 'dev-encryption',
    };
    dev = startCli('dev', ['dev'], env, join(dir, 'dev.log'));
    await dev.waitForLine(/^ready$/, 150_000);
    const line = await dev.waitForLine(/^codec server /, 1_000);
    codecUrl = line.split(' ')[2] as string;
  }, 180_000);

  afterAll(async () => {
    await dev?.stop();
    await policy?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('makes an owner-only key ring in the data folder and says payloads are encrypted', async () => {
    const file = join(dir, 'data', 'keys', 'payload-keys.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    await dev.waitForLine(new RegExp(`^payload keys ${file} \\(created\\)$`), 1_000);
    await dev.waitForLine(
      /payloads encrypted \(AES-256-GCM, key k\S+ of 1, from .*payload-keys\.json\)/,
      1_000,
    );
  });

  it("points the Temporal UI at the codec server, which grants the UI's origin", async () => {
    const settings = (await (await fetch(`http://127.0.0.1:${uiPort}/api/v1/settings`)).json()) as {
      Codec?: { Endpoint?: string };
    };
    const tokenFile = join(dir, 'data', 'keys', 'codec-token');
    expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
    const token = (await readFile(tokenFile, 'utf8')).trim();
    expect(settings.Codec?.Endpoint).toBe(`${codecUrl}/${token}`);
    const origin = `http://127.0.0.1:${uiPort}`;
    expect(await codecPreflightOrigin(codecUrl, origin)).toBe(origin);
  });

  it('shows the run input to the temporal CLI decrypted through the codec server, and only then', async () => {
    const cli = findTemporalExecutable();
    if (cli.type !== 'existing-path') throw new Error('the temporal CLI is not installed (npm run setup)');
    const token = (await readFile(join(dir, 'data', 'keys', 'codec-token'), 'utf8')).trim();
    const show = async (extra: string[] = [], auth?: string) =>
      (
        await run(
          cli.path,
          [
            'workflow',
            'show',
            '--workflow-id',
            'training-dev-encryption',
            '--address',
            address,
            '--output',
            'json',
            ...extra,
          ],
          { env: { ...process.env, TEMPORAL_CODEC_AUTH: auth ?? '' } },
        )
      ).stdout;
    const startInput = (stdout: string) => {
      const history = JSON.parse(stdout) as {
        events: { workflowExecutionStartedEventAttributes?: { input: { payloads: JsonPayload[] } } }[];
      };
      const payload = history.events[0]?.workflowExecutionStartedEventAttributes?.input.payloads[0];
      return {
        encoding: Buffer.from(payload?.metadata.encoding ?? '', 'base64').toString(),
        data: Buffer.from(payload?.data ?? '', 'base64').toString('latin1'),
      };
    };
    const raw = startInput(await show());
    expect(raw.encoding).toBe('binary/encrypted');
    expect(raw.data).not.toContain('dev-encryption');
    await expect(show(['--codec-endpoint', codecUrl])).rejects.toThrow(/401|Unauthorized|codec/i);
    const decoded = startInput(await show(['--codec-endpoint', codecUrl], `Bearer ${token}`));
    expect(decoded.encoding).toBe('json/plain');
    expect(JSON.parse(decoded.data)).toMatchObject({ runId: 'dev-encryption', method: 'combine' });
  });

  it('lets `train status` read the run with the data folder key, and explains a missing key', async () => {
    const status = await run(process.execPath, [cliEntry, 'train', 'status', '--json'], {
      env: { ...process.env, ...env },
    });
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: 'dev-encryption', policyVersion: 0 });
    const keyless = await run(process.execPath, [cliEntry, 'train', 'status', '--json'], {
      env: { ...process.env, ...env, OPENCLAW_DATA_DIR: join(dir, 'elsewhere') },
    }).catch((error: { stderr: string }) => error);
    expect('stderr' in keyless ? keyless.stderr : '').toMatch(
      /these payloads are encrypted: give this command the key ring/,
    );
  });
});
