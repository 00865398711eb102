import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type ReadyProcess, startReadyLineProcess } from './ready-line-process.js';

const execFileAsync = promisify(execFile);

/** The Python that has the engine installed: OPENCLAW_PYTHON, else the project's .venv, else python3. */
export function enginePython(env: NodeJS.ProcessEnv = process.env): string {
  if (env.OPENCLAW_PYTHON) return env.OPENCLAW_PYTHON;
  const venv = fileURLToPath(new URL('../.venv/bin/python', import.meta.url));
  return existsSync(venv) ? venv : 'python3';
}

/**
 * Writes a tiny random Hugging Face model folder (`make-tiny-model`) unless one is already there. `headDim`
 * 64 makes one vLLM's CPU attention serves (it refuses the default 16).
 */
export async function makeTinyModel(dir: string, seed = 0, headDim = 16): Promise<string> {
  if (existsSync(resolve(dir, 'config.json'))) return dir;
  await execFileAsync(enginePython(), [
    '-m',
    'openclaw_engine',
    'make-tiny-model',
    dir,
    '--seed',
    String(seed),
    '--head-dim',
    String(headDim),
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

export type EngineProcess = ReadyProcess;

/** Starts `python -m openclaw_engine serve` and resolves once it prints `ready http://HOST:PORT`. */
export function startReferenceEngine(options: EngineProcessOptions): Promise<EngineProcess> {
  const args = ['-m', 'openclaw_engine', 'serve', '--model', options.model];
  args.push('--host', options.host ?? '127.0.0.1', '--port', String(options.port ?? 0));
  if (options.trainer) args.push('--trainer');
  if (options.loraRank) args.push('--lora-rank', String(options.loraRank));
  if (options.device) args.push('--device', options.device);
  if (options.weightVersion) args.push('--weight-version', options.weightVersion);
  return startReadyLineProcess(enginePython(), args, {
    name: 'engine',
    readyTimeoutMs: options.readyTimeoutMs ?? 120_000,
    onLine: options.onLine,
  });
}
