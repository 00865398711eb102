// The Temporal server as production runs it, for tests and benchmarks: go.temporal.io/server built from the
// Go module proxy, on PostgreSQL from Debian (postgres-server.ts, with a password, as the server's own user),
// both in one folder; scripts/temporal-server.sh sets up the schema and runs the server on that PostgreSQL
// (`run` with POSTGRES_EXTERNAL=1: the script execs the server, so the child's pid is the server's).
// Building the binaries the first time takes minutes (cached in build/temporal-server/).

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmod, mkdir, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { newPostgresPassword, startPostgres } from './postgres-server.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../scripts/temporal-server.sh', import.meta.url));
/** The server's frontend takes its port and the next 8 (services and membership). */
const PORTS_PER_SERVER = 9;

export interface TemporalCluster {
  address: string;
  namespace: string;
  /** The folder with the server's config and its log, and PostgreSQL's folder (`postgres`). */
  dir: string;
  /** The Temporal server process (its pid is what memory figures read). */
  readonly process: ChildProcess;
  /** The PostgreSQL postmaster's pid (its backends are its children). */
  postgresPid(): number | null;
  /** Lines the server logged at level error so far. */
  errorLines(): number;
  /** SIGKILL to the server alone (PostgreSQL keeps running), waiting until it is gone. */
  kill9(): Promise<void>;
  /** Starts the server again on the same folder, port and database. */
  restart(): Promise<void>;
  /** Stops the server and PostgreSQL. */
  stop(): Promise<void>;
}

function probe(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A base port whose next `count - 1` neighbours are free too, below 32768: the server stores its membership
 * ports in a PostgreSQL smallint.
 */
export async function freePortRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    let free = true;
    for (let port = base; port < base + count && free; port++) free = await probe(port);
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

/** Builds the binaries when they are missing (minutes on a new machine; nothing once cached). */
export async function ensureTemporalServerBuilt(): Promise<void> {
  await run('bash', [SCRIPT, 'build'], { maxBuffer: 16 * 1024 * 1024, timeout: 30 * 60_000 });
}

/** Waits until the namespace answers a list call (a new namespace takes a moment to reach every service). */
async function untilNamespaceReady(
  address: string,
  namespace: string,
  child: ChildProcess,
  timeoutMs: number,
  output: () => string,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(
        `the Temporal server exited (code ${child.exitCode}, signal ${child.signalCode}):\n${output()}`,
      );
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.listWorkflowExecutions({ namespace, pageSize: 1 });
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`the Temporal server at ${address} is not ready: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * Starts PostgreSQL and the server in `dir` on free ports and resolves once the `default` namespace takes
 * calls. `dir` is created and made enterable by others (PostgreSQL runs as the postgres user when this
 * process is root): its parent folders must be enterable too.
 */
export async function startTemporalCluster(dir: string): Promise<TemporalCluster> {
  await ensureTemporalServerBuilt();
  await mkdir(dir, { recursive: true });
  // PostgreSQL runs as a non-root user, who must be able to enter the folder and, in the temporary folder,
  // the folders above it (mkdtemp makes them private).
  await chmod(dir, 0o755);
  for (let parent = dirname(resolve(dir)); parent.startsWith(`${tmpdir()}/`); parent = dirname(parent))
    await chmod(parent, ((await stat(parent)).mode & 0o777) | 0o711);
  const port = await freePortRange(PORTS_PER_SERVER);
  const postgres = await startPostgres({
    dir: join(dir, 'postgres'),
    user: 'temporal',
    password: newPostgresPassword(),
  });
  const namespace = 'default';
  const address = `127.0.0.1:${port}`;
  const env = {
    ...process.env,
    TEMPORAL_PORT: String(port),
    POSTGRES_EXTERNAL: '1',
    POSTGRES_HOST: '127.0.0.1',
    POSTGRES_PORT: String(postgres.port),
    POSTGRES_USER: postgres.user,
    POSTGRES_PASSWORD: postgres.password ?? '',
    TEMPORAL_LOG_LEVEL: 'error',
  };
  let errors = 0;
  const recent: string[] = [];
  let child: ChildProcess;
  const spawnServer = async () => {
    child = spawn('bash', [SCRIPT, 'run', dir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const count = (chunk: Buffer) => {
      const lines = chunk.toString('utf8').split('\n');
      recent.push(...lines.filter(Boolean));
      recent.splice(0, Math.max(0, recent.length - 30));
      errors += lines.filter((line) => /"level":"error"|\tERROR\t|level=error/i.test(line)).length;
    };
    child.stdout?.on('data', count);
    child.stderr?.on('data', count);
    await untilNamespaceReady(address, namespace, child, 180_000, () => recent.join('\n'));
  };
  const kill9 = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  };
  try {
    await spawnServer();
  } catch (error) {
    await kill9();
    await postgres.destroy();
    throw error;
  }
  return {
    address,
    namespace,
    dir,
    get process() {
      return child;
    },
    postgresPid: () => postgres.pid(),
    errorLines: () => errors,
    kill9,
    restart: spawnServer,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      }
      await run('bash', [SCRIPT, 'stop', dir], { env });
      await postgres.stop();
    },
  };
}
