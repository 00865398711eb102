// `openclaw-rl keys init`, `keys add` and `keys rotate` as a user (or compose's data-init) runs them.

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseApiKeysFile } from '../../security/api-keys.js';
import { readPayloadKeyFile } from '../../security/payload-keys.js';

const run = promisify(execFile);
const cliEntry = join(import.meta.dirname, '../../bin/openclaw-rl.mjs');

describe('openclaw-rl keys', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keys-command-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // No key ring from the test run's environment: the command's own files are what is checked.
  const keys = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    run(process.execPath, [cliEntry, 'keys', ...args, '--data-dir', dir], {
      env: { ...process.env, OPENCLAW_PAYLOAD_KEYS: '', OPENCLAW_PAYLOAD_KEY_ID: '', ...env },
    });

  it('init makes an API key and a payload key ring once, owner-only, and says where they are', async () => {
    const first = await keys(['init']);
    expect(first.stdout).toContain(`api keys ${join(dir, 'keys', 'api-keys')} (created with one new key)`);
    expect(first.stdout).toContain(`payload keys ${join(dir, 'keys', 'payload-keys.json')} (created)`);
    const apiFile = join(dir, 'keys', 'api-keys');
    const [key] = parseApiKeysFile(await readFile(apiFile, 'utf8'));
    expect(key?.key).toMatch(/^ocrl-/);
    expect(key?.tenant).toBeUndefined();
    for (const file of ['api-keys', 'payload-keys.json'])
      expect((await stat(join(dir, 'keys', file))).mode & 0o777).toBe(0o600);
    const ring = readPayloadKeyFile(join(dir, 'keys', 'payload-keys.json'));

    const again = await keys(['init']);
    expect(again.stdout).toMatch(/exists, unchanged.*\n.*exists, unchanged/);
    expect(readPayloadKeyFile(join(dir, 'keys', 'payload-keys.json'))).toEqual(ring);
  });

  it('add makes a key for a tenant, keeps the keys already there and refuses a bad tenant name', async () => {
    const apiFile = join(dir, 'keys', 'api-keys');
    const before = parseApiKeysFile(await readFile(apiFile, 'utf8'));
    const { stdout, stderr } = await keys(['add', '--tenant', 'alice']);
    expect(stderr).toContain(`api keys ${apiFile}: added a key for tenant alice`);
    const after = parseApiKeysFile(await readFile(apiFile, 'utf8'));
    expect(after).toEqual([...before, { key: stdout.trim(), tenant: 'alice' }]);
    expect((await stat(apiFile)).mode & 0o777).toBe(0o600);
    const refused = await keys(['add', '--tenant', 'a/b']).catch((error: { stderr: string }) => error);
    expect('stderr' in refused ? refused.stderr : '').toMatch(/a tenant name is 1-64 letters/);
  });

  it('rotate adds a key that encrypts from now on and keeps the old ones', async () => {
    const before = readPayloadKeyFile(join(dir, 'keys', 'payload-keys.json'));
    const { stdout } = await keys(['rotate']);
    const after = readPayloadKeyFile(join(dir, 'keys', 'payload-keys.json'));
    expect(stdout).toContain(`${after.currentId} now encrypts; 2 keys decrypt`);
    expect(after.currentId).not.toBe(before.currentId);
    expect(after.keys.get(before.currentId)).toEqual(before.keys.get(before.currentId));
  });

  it('rotate refuses when the keys come from OPENCLAW_PAYLOAD_KEYS', async () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const refused = await keys(['rotate'], { OPENCLAW_PAYLOAD_KEYS: `k1:${key}` }).catch(
      (error: { stderr: string }) => error,
    );
    expect('stderr' in refused ? refused.stderr : '').toMatch(/come from OPENCLAW_PAYLOAD_KEYS/);
  });
});
