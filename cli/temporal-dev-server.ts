import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { findTemporalExecutable } from './temporal-cli.js';

export function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port))
    throw new Error(`Temporal address must be host:port, got "${address}"`);
  return { host: address.slice(0, colon), port };
}

/** Whether something accepts TCP connections at `address` (a Temporal frontend, presumably). */
export function isReachable(address: string, timeoutMs = 1_000): Promise<boolean> {
  const { host, port } = splitAddress(address);
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (ok: boolean) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

/**
 * Waits up to 60 s until a just-spawned `temporal server start-dev` answers at `address`; gives back how to
 * stop it (SIGTERM, then wait for the exit). A server that exits or stays silent is stopped and an error.
 */
export async function devServerAnswering(child: ChildProcess, address: string): Promise<() => Promise<void>> {
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill('SIGTERM');
    await exited;
  };
  const deadline = Date.now() + 60_000;
  while (!(await isReachable(address))) {
    if (child.exitCode !== null) throw new Error(`temporal dev server exited with code ${child.exitCode}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`temporal dev server did not answer at ${address} within 60 s`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return stop;
}

export interface DevServer {
  uiUrl: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** The UI port of a dev server at `address`: its port + 1000, the CLI's own default. */
export function devServerUiPort(address: string): number {
  return splitAddress(address).port + 1000;
}

/**
 * `temporal server start-dev` with its database in `<dataDir>/temporal.db`, so workflows survive a restart
 * of the server, and its Web UI on port + 1000 (its payloads decoded through `codecEndpoint` when given).
 */
export async function startTemporalDevServer(
  address: string,
  dataDir: string,
  options: { codecEndpoint?: string } = {},
): Promise<DevServer> {
  const executable = findTemporalExecutable();
  if (executable.type !== 'existing-path') {
    throw new Error(
      'no temporal CLI found: run `npm run setup` (installs it into .venv/bin) or set TEMPORAL_CLI_PATH',
    );
  }
  const { host, port } = splitAddress(address);
  mkdirSync(resolve(dataDir), { recursive: true });
  const uiPort = devServerUiPort(address);
  const child = spawn(
    executable.path,
    [
      'server',
      'start-dev',
      '--ip',
      host,
      '--port',
      String(port),
      '--ui-port',
      String(uiPort),
      '--db-filename',
      join(resolve(dataDir), 'temporal.db'),
      '--log-level',
      'error',
      ...(options.codecEndpoint ? ['--ui-codec-endpoint', options.codecEndpoint] : []),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const stop = await devServerAnswering(child, address);
  return { uiUrl: `http://${host}:${uiPort}`, process: child, stop };
}
