// A fresh `temporal server start-dev` as a child process (its pid is what memory figures read), with its
// database in memory or in a SQLite file, no Web UI, listening on a free port.

import { type ChildProcess, spawn } from 'node:child_process';
import { findTemporalExecutable } from '../../cli/temporal-cli.js';
import { devServerAnswering } from '../../cli/temporal-dev-server.js';
import { freePortPair } from '../../test/support/free-port.js';

export interface DevServerProcess {
  address: string;
  process: ChildProcess;
  /** Lines the server logged at level ERROR so far. */
  errorLines(): number;
  stop(): Promise<void>;
}

/** `dbFile` null keeps the database in memory. */
export async function startDevServerProcess(dbFile: string | null): Promise<DevServerProcess> {
  const executable = findTemporalExecutable();
  if (executable.type !== 'existing-path') throw new Error('no temporal CLI found: run `npm run setup`');
  const port = await freePortPair(1000);
  const address = `127.0.0.1:${port}`;
  const child = spawn(
    executable.path,
    [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(port),
      '--headless',
      '--log-level',
      'error',
      ...(dbFile !== null ? ['--db-filename', dbFile] : []),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  // Its error lines (persistence timeouts on an overloaded machine) are counted, not printed over the figures.
  let errorLines = 0;
  child.stderr?.on('data', (chunk: Buffer) => {
    errorLines += chunk
      .toString('utf8')
      .split('\n')
      .filter((line) => line.includes('level=ERROR')).length;
  });
  const stop = await devServerAnswering(child, address);
  return { address, process: child, errorLines: () => errorLines, stop };
}
