import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { testPayloadKeysEnv } from './temporal.js';

export { freePort, freePortPair } from './free-port.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const cliEntry = fileURLToPath(new URL('../../bin/openclaw-rl.mjs', import.meta.url));

// Children still alive when the test process exits (a timeout, a crash) are killed with it, never orphaned.
const alive = new Set<ChildProcess>();
const groups = new Set<(signal: NodeJS.Signals) => void>();
process.once('exit', () => {
  for (const kill of groups) kill('SIGKILL');
  for (const child of alive) child.kill('SIGKILL');
});

/**
 * This process's environment without any OPENCLAW_ or TEMPORAL_ setting a developer may have exported, plus the
 * run's payload key ring: the `openclaw-rl` processes a test starts with it encrypt as the tests' own clients
 * and workers do.
 */
export function cliTestEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('OPENCLAW_') && !key.startsWith('TEMPORAL_')) env[key] = value;
  }
  return { ...env, ...testPayloadKeysEnv() };
}

/** Kills `child` with this process if it is still running then (for children started elsewhere). */
export function killOnExit(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  alive.add(child);
  child.once('exit', () => alive.delete(child));
}

/** One `openclaw-rl` command running as its own process, the way a user starts it. */
export interface CliProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** The last lines it printed (stdout and stderr), for failure messages. */
  tail(lines?: number): string;
  /** Resolves with the first printed line matching `pattern`; rejects if it exits or the time runs out. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<string>;
  /** `kill -9`, then waits until it is gone. */
  kill9(): Promise<void>;
  /** SIGTERM (a clean stop), SIGKILL after `graceMs`; resolves once it is gone. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Runs `node bin/openclaw-rl.mjs <args>` from the repository root with `env` added to this process's
 * environment. Every line it prints goes to `logFile` (kept for a look after a failure) and to `tail()`.
 */
export function startCli(name: string, args: string[], env: NodeJS.ProcessEnv, logFile: string): CliProcess {
  const child = spawn(process.execPath, [cliEntry, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return superviseChild(name, child, logFile);
}

/**
 * A started child (stdout and stderr piped) as a `CliProcess`: its lines logged and watched, killed with this
 * process. `group`: the child leads its own process group (spawned `detached`), and signals go to the whole
 * group, so helpers it started go with it.
 */
export function superviseChild(
  name: string,
  child: ChildProcess,
  logFile: string,
  options: { group?: boolean } = {},
): CliProcess {
  const signal = (kind: NodeJS.Signals) => {
    if (options.group && child.pid !== undefined) {
      try {
        process.kill(-child.pid, kind);
        return;
      } catch {
        // the group is gone already; fall through to the child itself
      }
    }
    child.kill(kind);
  };
  alive.add(child);
  if (options.group) groups.add(signal);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, how) => {
      alive.delete(child);
      groups.delete(signal);
      remember(`[${name} exited: code ${code}, signal ${how}]`);
      resolve();
    });
  });
  const recent: string[] = [];
  const watchers = new Set<(line: string) => void>();
  const remember = (line: string) => {
    recent.push(line);
    if (recent.length > 300) recent.shift();
    appendFileSync(logFile, `${new Date().toISOString()} ${line}\n`);
    for (const watch of watchers) watch(line);
  };
  if (child.stdout) createInterface({ input: child.stdout }).on('line', remember);
  if (child.stderr) createInterface({ input: child.stderr }).on('line', remember);
  const isGone = () => child.exitCode !== null || child.signalCode !== null;

  return {
    name,
    child,
    tail: (lines = 40) => recent.slice(-lines).join('\n'),
    waitForLine(pattern, timeoutMs) {
      const seen = recent.find((line) => pattern.test(line));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const fail = (why: string) => {
          clearTimeout(timer);
          watchers.delete(watch);
          reject(new Error(`${name} ${why} ${pattern}:\n${recent.join('\n')}`));
        };
        const watch = (line: string) => {
          if (!pattern.test(line)) return;
          clearTimeout(timer);
          watchers.delete(watch);
          resolve(line);
        };
        const timer = setTimeout(() => fail(`did not print within ${timeoutMs} ms:`), timeoutMs);
        watchers.add(watch);
        void exited.then(() => {
          if (watchers.has(watch)) fail('exited before printing');
        });
      });
    },
    async kill9() {
      if (isGone()) return;
      signal('SIGKILL');
      await exited;
    },
    async stop(graceMs = 10_000) {
      if (isGone()) return;
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
