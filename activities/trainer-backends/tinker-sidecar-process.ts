import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { enginePython } from '../../workers/reference-engine-process.js';

export interface TinkerSidecarOptions {
  baseModel: string;
  loraRank?: number;
  /** A local folder with the base model's tokenizer and chat template; default the SDK's (from Hugging Face). */
  tokenizer?: string;
  /** Training routes only, no serving routes (and no tokenizer needed). */
  trainOnly?: boolean;
  lossFn?: 'ppo' | 'importance_sampling' | 'cispo';
  host?: string;
  /** 0 picks a free port; the real one is read from the `ready` line. */
  port?: number;
  /** A module with the Tinker SDK surface instead of `tinker` (tests pass their fake). */
  sdkModule?: string;
  env?: NodeJS.ProcessEnv;
  readyTimeoutMs?: number;
}

export interface TinkerSidecarProcess {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `python -m openclaw_engine.tinker_sidecar` and resolves once it prints `ready http://HOST:PORT`. */
export function startTinkerSidecar(options: TinkerSidecarOptions): Promise<TinkerSidecarProcess> {
  const args = ['-m', 'openclaw_engine.tinker_sidecar', '--base-model', options.baseModel];
  args.push('--host', options.host ?? '127.0.0.1', '--port', String(options.port ?? 0));
  if (options.loraRank) args.push('--lora-rank', String(options.loraRank));
  if (options.tokenizer) args.push('--tokenizer', options.tokenizer);
  if (options.trainOnly) args.push('--no-serve');
  if (options.lossFn) args.push('--loss-fn', options.lossFn);
  if (options.sdkModule) args.push('--sdk-module', options.sdkModule);
  const child = spawn(enginePython(), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  const recent: string[] = [];
  const remember = (line: string) => {
    recent.push(line);
    if (recent.length > 40) recent.shift();
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

  const timeoutMs = options.readyTimeoutMs ?? 60_000;
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`Tinker sidecar not ready within ${timeoutMs} ms:\n${recent.join('\n')}`));
    }, timeoutMs);
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
      reject(new Error(`Tinker sidecar exited (code ${code}, signal ${signal}):\n${recent.join('\n')}`));
    });
  });
}
