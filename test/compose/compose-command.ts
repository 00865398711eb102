import { execFile } from 'node:child_process';
import { cp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The repository root: compose files and build contexts are relative to it. */
export const ROOT = join(import.meta.dirname, '../..');

/** `docker compose` (v2) where installed, else docker-compose 1.29. */
export async function composeCommand(): Promise<string[]> {
  try {
    await run('docker', ['compose', 'version']);
    return ['docker', 'compose'];
  } catch {
    return ['docker-compose'];
  }
}

/** One compose command (`compose` from `composeCommand`) on these files, in the repository, with this env. */
export function composeRunner(
  compose: () => string[],
  files: readonly string[],
  env: () => NodeJS.ProcessEnv,
): (args: string[], timeoutMs?: number) => Promise<{ stdout: string; stderr: string }> {
  return (args, timeoutMs = 60_000) => {
    const [command, ...prefix] = compose();
    return run(command as string, [...prefix, ...files, ...args], {
      cwd: ROOT,
      env: env(),
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
  };
}

/**
 * What the local images are built on: this machine's extra CAs trusted in them (as docker/build-images.sh does)
 * and the Debian base image made with debootstrap.
 */
export async function prepareLocalImageBase(): Promise<void> {
  const cas = await readdir('/usr/local/share/ca-certificates').catch(() => [] as string[]);
  for (const name of cas.filter((n) => n.endsWith('.crt')))
    await cp(join('/usr/local/share/ca-certificates', name), join(ROOT, 'docker/ca-certificates', name));
  await run('bash', [join(ROOT, 'docker/base-image.sh')], { timeout: 15 * 60_000 });
}
