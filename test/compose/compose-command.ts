import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** `docker compose` (v2) where installed, else docker-compose 1.29. */
export async function composeCommand(): Promise<string[]> {
  try {
    await run('docker', ['compose', 'version']);
    return ['docker', 'compose'];
  } catch {
    return ['docker-compose'];
  }
}
