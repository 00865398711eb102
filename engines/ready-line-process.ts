import { type ChildProcess, type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';

/** A Python server of the engine package, started and ready at `url`. */
export interface ReadyProcess {
  url: string;
  process: ChildProcess;
  /** SIGTERM, then SIGKILL after 10 s; resolves once the process has exited. */
  stop(): Promise<void>;
}

export interface ReadyProcessOptions {
  /** Named in errors, e.g. "engine". */
  name: string;
  env?: NodeJS.ProcessEnv;
  readyTimeoutMs: number;
  /** Receives every line the process prints (after `ready` too). */
  onLine?: (line: string) => void;
}

/**
 * Spawns `command args` and resolves once it prints `ready http://HOST:PORT` on stdout, which is how the
 * engine's servers (the reference engine, the Tinker sidecar) say they listen: with port 0 the real port is
 * only known then. A process that exits or stays silent is an error carrying its last 40 lines.
 */
/** A spawned server: its process, its last 40 lines, and how to stop it. */
export interface SpawnedServer {
  child: ChildProcessByStdio<null, Readable, Readable>;
  recent: string[];
  /** Keeps a line in `recent` and passes it to `onLine`. */
  remember(line: string): void;
  stop(): Promise<void>;
}

/**
 * Spawns `command args` with stderr (and stdout, unless `ownStdout`) read line by line into `recent` and
 * `onLine`. `group`: the server leads a process group of its own, and `stop` signals the whole group (a
 * server that forks workers, like vLLM, takes them with it).
 */
export function spawnServer(
  command: string,
  args: string[],
  options: ReadyProcessOptions & { group?: boolean; ownStdout?: boolean },
): SpawnedServer {
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env ? { ...process.env, ...options.env } : process.env,
    detached: options.group === true,
  });
  const recent: string[] = [];
  const remember = (line: string) => {
    recent.push(line);
    if (recent.length > 40) recent.shift();
    options.onLine?.(line);
  };
  createInterface({ input: child.stderr }).on('line', remember);
  if (!options.ownStdout) createInterface({ input: child.stdout }).on('line', remember);
  const signal = (name: NodeJS.Signals) => {
    try {
      if (options.group && child.pid !== undefined) process.kill(-child.pid, name);
      else child.kill(name);
    } catch {
      // already gone
    }
  };
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    // A group's other members (engine workers) may outlive their leader for a moment.
    if (options.group) signal('SIGKILL');
  };
  return { child, recent, remember, stop };
}

export function startReadyLineProcess(
  command: string,
  args: string[],
  options: ReadyProcessOptions,
): Promise<ReadyProcess> {
  const { child, recent, remember, stop } = spawnServer(command, args, { ...options, ownStdout: true });
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(
        new Error(`${options.name} not ready within ${options.readyTimeoutMs} ms:\n${recent.join('\n')}`),
      );
    }, options.readyTimeoutMs);
    createInterface({ input: child.stdout }).on('line', (line) => {
      remember(line);
      const match = /^ready (\S+)$/.exec(line.trim());
      if (match?.[1]) {
        clearTimeout(timer);
        resolvePromise({ url: match[1], process: child, stop });
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `${options.name} exited (code ${code}, signal ${signal}) before ready:\n${recent.join('\n')}`,
        ),
      );
    });
  });
}
