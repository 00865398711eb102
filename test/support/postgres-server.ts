// A real PostgreSQL server for tests and benchmarks: Debian's `postgresql` package (.ci/run installs
// it), a fresh data folder made by initdb, started with pg_ctl on a free port. No system service is involved.
// PostgreSQL refuses to run as root, so under root (CI) the server runs as the package's `postgres` user,
// which then owns the server's folder. The one helper for every test and benchmark that needs PostgreSQL:
// the sample store's and the real Temporal server's (temporal-cluster.ts, with a password).

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';

const run = promisify(execFile);

export interface PostgresOptions {
  /** The server's folder (its data and log), made if missing; default a new temporary folder. */
  dir?: string;
  /** Default a free port. */
  port?: number;
  /** The superuser initdb creates (default `openclaw`). */
  user?: string;
  /** With a password, connections must give it (scram-sha-256); without, any local connection is trusted. */
  password?: string;
}

export interface PostgresServer {
  /** `postgres://openclaw@127.0.0.1:<port>/postgres` */
  url: string;
  /** The URL of another database on this server (the PostgreSQL store creates it on first use). */
  databaseUrl(name: string): string;
  port: number;
  user: string;
  /** The password connections give, or null (trusted). */
  password: string | null;
  /** The server's folder: `data` (the cluster) and `server.log`. */
  dir: string;
  /** The postmaster's pid while it runs (its backends are its children). */
  pid(): number | null;
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

/** A random password for a test server (letters and digits, so it needs no escaping in a URL). */
export function newPostgresPassword(): string {
  return randomBytes(18).toString('base64url').replace(/[-_]/g, 'x');
}

export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (bin === null)
    throw new Error(
      "PostgreSQL is not installed: apt-get install postgresql (Debian's package; .ci/run installs it)",
    );
  const owned = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'openclaw-pg-')));
  if (!owned) await mkdir(dir, { recursive: true });
  const data = join(dir, 'data');
  const user = options.user ?? 'openclaw';
  const password = options.password ?? null;
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
  const auth = ['--auth=trust'];
  if (password !== null) {
    const pwfile = join(dir, 'initdb-password');
    await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
    if (root) await run('chown', ['postgres', pwfile]);
    auth.splice(0, 1, '--auth=scram-sha-256', `--pwfile=${pwfile}`);
  }
  try {
    await as('initdb', ['-D', data, '-U', user, ...auth, '-E', 'UTF8', '--no-locale', '--no-sync']);
  } finally {
    if (password !== null) await rm(join(dir, 'initdb-password'), { force: true });
  }
  const port = options.port ?? (await freePort());
  const serverOptions = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${data} -c max_connections=200`;
  const start = async () => {
    await as('pg_ctl', [
      '-D',
      data,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      serverOptions,
      'start',
    ]);
  };
  const stopWith = async (mode: 'fast' | 'immediate') => {
    await as('pg_ctl', ['-D', data, '-w', '-t', '60', '-m', mode, 'stop']).catch(() => undefined);
  };
  await start();
  const credentials = password === null ? user : `${user}:${password}`;
  const databaseUrl = (name: string) => `postgres://${credentials}@127.0.0.1:${port}/${name}`;
  return {
    url: databaseUrl('postgres'),
    databaseUrl,
    port,
    user,
    password,
    dir,
    pid() {
      try {
        return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      } catch {
        return null;
      }
    },
    start,
    stop: () => stopWith('fast'),
    crash: () => stopWith('immediate'),
    async destroy() {
      await stopWith('immediate');
      await rm(owned ? dir : data, { recursive: true, force: true });
    },
  };
}
