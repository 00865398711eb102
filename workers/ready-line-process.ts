import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

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
export function startReadyLineProcess(
  command: string,
  args: string[],
  options: ReadyProcessOptions,
): Promise<ReadyProcess> {
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env ? { ...process.env, ...options.env } : process.env,
  });
  const recent: string[] = [];
  const remember = (line: string) => {
    recent.push(line);
    if (recent.length > 40) recent.shift();
    options.onLine?.(line);
  };
  createInterface({ input: child.stderr }).on('line', remember);

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

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
