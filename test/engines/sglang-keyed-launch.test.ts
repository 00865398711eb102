// An operator on a GPU host runs `ps` and used to read the engine token in SGLang's command line
// (`--api-key <token>`), visible to every user of the host. Now the token travels in the container's environment
// (or its token file) and the launcher hands it to SGLang inside the process. This starts the launcher as the
// container does, over a double of `sglang.launch_server` (test/fixtures/sglang-launch-double, checked against
// sglang 0.5.23's launch_server.py, which parses sys.argv[1:]), and reads the process's /proc/<pid>/cmdline.

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sglangKeyedCommand } from '../../engines/sglang-keyed-launch.js';

const DOUBLE = join(import.meta.dirname, '../fixtures/sglang-launch-double');
const TOKEN = 'ocrl-engine-secret-token-for-the-ps-check';

interface Seen {
  argv: string[];
  env_token: boolean;
}

/** Starts the launcher with `env`; resolves with what the double parsed and the process's command line. */
async function launch(env: Record<string, string>): Promise<Seen & { cmdline: string }> {
  const [command, ...args] = sglangKeyedCommand(['--model-path', '/models/policy', '--port', '30000']);
  const child: ChildProcessWithoutNullStreams = spawn(command as string, args, {
    env: { PATH: process.env.PATH ?? '', PYTHONPATH: DOUBLE, ...env },
  });
  try {
    const lines = createInterface({ input: child.stdout });
    const [line] = (await once(lines, 'line')) as [string];
    const cmdline = (await readFile(`/proc/${child.pid}/cmdline`, 'utf8')).split('\0').join(' ');
    return { ...(JSON.parse(line) as Seen), cmdline };
  } finally {
    child.stdin.end();
    await once(child, 'exit');
  }
}

describe('SGLang launched with its key from the environment', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sglang-launch-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('hands SGLang --api-key from OPENCLAW_ENGINE_TOKEN, which ps does not show', async () => {
    const seen = await launch({ OPENCLAW_ENGINE_TOKEN: TOKEN });
    expect(seen.argv).toEqual(['--model-path', '/models/policy', '--port', '30000', '--api-key', TOKEN]);
    expect(seen.cmdline).toContain('--model-path /models/policy');
    expect(seen.cmdline).not.toContain(TOKEN);
    // Dropped from the environment SGLang's worker processes inherit.
    expect(seen.env_token).toBe(false);
  });

  it('reads the key from OPENCLAW_ENGINE_TOKEN_FILE (compose), and passes no key when there is none', async () => {
    const file = join(dir, 'engine-token');
    await writeFile(file, `${TOKEN}\n`, { mode: 0o600 });
    const fromFile = await launch({ OPENCLAW_ENGINE_TOKEN_FILE: file });
    expect(fromFile.argv.slice(-2)).toEqual(['--api-key', TOKEN]);
    expect(fromFile.cmdline).not.toContain(TOKEN);
    expect((await launch({})).argv).not.toContain('--api-key');
  });
});
