import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The Python that has the engine installed: OPENCLAW_PYTHON, else the project's .venv, else python3. */
export function enginePython(env: NodeJS.ProcessEnv = process.env): string {
  if (env.OPENCLAW_PYTHON) return env.OPENCLAW_PYTHON;
  const venv = fileURLToPath(new URL('../.venv/bin/python', import.meta.url));
  return existsSync(venv) ? venv : 'python3';
}

/** Writes a tiny random Hugging Face model folder (`make-tiny-model`) unless one is already there. */
export async function makeTinyModel(dir: string, seed = 0): Promise<string> {
  if (existsSync(resolve(dir, 'config.json'))) return dir;
  await execFileAsync(enginePython(), [
    '-m',
    'openclaw_engine',
    'make-tiny-model',
    dir,
    '--seed',
    String(seed),
  ]);
  return dir;
}

export interface EngineProcessOptions {
  model: string;
  host?: string;
  /** 0 picks a free port; the real one is read from the engine's `ready` line. */
  port?: number;
  trainer?: boolean;
  loraRank?: number;
  device?: 'cpu' | 'cuda';
  /** The `weight_version` the engine reports before any update (default "0"). */
  weightVersion?: string;
  readyTimeoutMs?: number;
  /** Receives every line the engine prints (after `ready` too). */
  onLine?: (line: string) => void;
}

export interface EngineProcess {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `python -m openclaw_engine serve` and resolves once it prints `ready http://HOST:PORT`. */
export function startReferenceEngine(options: EngineProcessOptions): Promise<EngineProcess> {
  const args = ['-m', 'openclaw_engine', 'serve', '--model', options.model];
  args.push('--host', options.host ?? '127.0.0.1', '--port', String(options.port ?? 0));
  if (options.trainer) args.push('--trainer');
  if (options.loraRank) args.push('--lora-rank', String(options.loraRank));
  if (options.device) args.push('--device', options.device);
  if (options.weightVersion) args.push('--weight-version', options.weightVersion);
  const child = spawn(enginePython(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
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
        new Error(`engine not ready within ${options.readyTimeoutMs ?? 120_000} ms:\n${recent.join('\n')}`),
      );
    }, options.readyTimeoutMs ?? 120_000);
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
      reject(new Error(`engine exited (code ${code}, signal ${signal}) before ready:\n${recent.join('\n')}`));
    });
  });
}
