// A user passed the judge's key as `--judge-api-key sk-…` and every user of the machine could read it in `ps`
// (/proc/<pid>/cmdline) while the command ran. Now keys come from `--judge-api-key-file` / `--policy-api-key-file`
// or the variables, and the inline flags stop with an error naming both, without repeating the key.

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromFlags } from '../../cli/cli-config.js';
import { envHostSettingsFromFlags } from '../../cli/env-worker-command.js';

const run = promisify(execFile);
const cliEntry = join(import.meta.dirname, '../../bin/openclaw-rl.mjs');
const SECRET = 'sk-inline-secret-0123456789';

describe('keys on the CLI', () => {
  let dir: string;
  let keyFile: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'secret-flags-'));
    keyFile = join(dir, 'judge-key');
    await writeFile(keyFile, `${SECRET}\n`, { mode: 0o600 });
    const line = { id: 'hi', messages: [{ role: 'user', content: 'hello' }], next_user: 'thanks!' };
    await writeFile(join(dir, 'heldout.jsonl'), `${JSON.stringify(line)}\n`);
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('refuses --judge-api-key on the command line, naming the variable and the file flag', async () => {
    const failed = await run(
      process.execPath,
      [cliEntry, 'eval', '--judge-api-key', SECRET, '--conversations', join(dir, 'heldout.jsonl')],
      { env: { ...process.env, OPENCLAW_DATA_DIR: dir } },
    ).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).not.toBe(0);
    expect(failed?.stderr).toMatch(
      /--judge-api-key is not accepted: .*\(ps, \/proc\/<pid>\/cmdline\); set OPENCLAW_JUDGE_API_KEY or pass --judge-api-key-file <file>/,
    );
    expect(failed?.stderr).not.toContain(SECRET);
  });

  it('reads the keys from their files, and refuses the inline forms of the env worker too', () => {
    expect(configFromFlags({ judgeApiKeyFile: keyFile }, {}).judge.apiKey).toBe(SECRET);
    const settings = envHostSettingsFromFlags({ judgeApiKeyFile: keyFile, policyApiKeyFile: keyFile }, {});
    expect(settings.judgeApiKey).toBe(SECRET);
    expect(settings.policyApiKey).toBe(SECRET);
    expect(envHostSettingsFromFlags({}, { OPENCLAW_POLICY_API_KEY: 'from-env' }).policyApiKey).toBe(
      'from-env',
    );
    expect(() => envHostSettingsFromFlags({ policyApiKey: SECRET }, {})).toThrow(
      /--policy-api-key is not accepted: .*OPENCLAW_POLICY_API_KEY or pass --policy-api-key-file <file>/,
    );
    expect(() => configFromFlags({ judgeApiKeyFile: join(dir, 'missing') }, {})).toThrow(
      /--judge-api-key-file .*missing: ENOENT/,
    );
  });
});
