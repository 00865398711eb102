// A real PostgreSQL server for tests and benchmarks: Debian's `postgresql` package (.ci/run installs
// it), a fresh data folder made by initdb in a temporary directory, started with pg_ctl on a free port. No
// system service is involved. PostgreSQL refuses to run as root, so under root (CI) the server runs as the
// package's `postgres` user, which then owns the temporary directory.

import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface PostgresServer {
  /** `postgres://openclaw@127.0.0.1:<port>/postgres` */
  url: string;
  /** The URL of another database on this server (the PostgreSQL store creates it on first use). */
  databaseUrl(name: string): string;
  port: number;
  dir: string;
  /** Starts it again on the same port and data (after `stop` or `crash`). */
  start(): Promise<void>;
  /** A clean shutdown. */
  stop(): Promise<void>;
  /** Stops it the way a crash would: no checkpoint, WAL replay on the next start (`pg_ctl -m immediate`). */
  crash(): Promise<void>;
  /** Stops it and deletes its data. */
  destroy(): Promise<void>;
}

/** The folder with initdb and pg_ctl: Debian keeps them in /usr/lib/postgresql/<major>/bin. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const majors = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] === undefined ? null : join(root, majors[0], 'bin');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (bin === null)
    throw new Error(
      "PostgreSQL is not installed: apt-get install postgresql (Debian's package; .ci/run installs it)",
    );
  const dir = await mkdtemp(join(tmpdir(), 'openclaw-pg-'));
  const data = join(dir, 'data');
  const root = userInfo().uid === 0;
  if (root) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const as = (command: string, args: string[]) =>
    root
      ? run('runuser', ['-u', 'postgres', '--', join(bin, command), ...args])
      : run(join(bin, command), args);

  // No fsync while initdb writes the template databases (a test setup); the server itself syncs as usual.
  await as('initdb', [
    '-D',
    data,
    '-U',
    'openclaw',
    '--auth=trust',
    '-E',
    'UTF8',
    '--no-locale',
    '--no-sync',
  ]);
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${data} -c max_connections=200`;
  const start = async () => {
    await as('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', options, 'start']);
  };
  const stopWith = async (mode: 'fast' | 'immediate') => {
    await as('pg_ctl', ['-D', data, '-w', '-t', '60', '-m', mode, 'stop']).catch(() => undefined);
  };
  await start();
  return {
    url: `postgres://openclaw@127.0.0.1:${port}/postgres`,
    databaseUrl: (name) => `postgres://openclaw@127.0.0.1:${port}/${name}`,
    port,
    dir,
    start,
    stop: () => stopWith('fast'),
    crash: () => stopWith('immediate'),
    async destroy() {
      await stopWith('immediate');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
