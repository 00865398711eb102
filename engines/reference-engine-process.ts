import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { z } from 'zod';
import { type ReadyProcess, startReadyLineProcess } from './ready-line-process.js';

const execFileAsync = promisify(execFile);

/** The Python that has the engine installed: OPENCLAW_PYTHON, else the project's .venv, else python3. */
export function enginePython(env: NodeJS.ProcessEnv = process.env): string {
  if (env.OPENCLAW_PYTHON) return env.OPENCLAW_PYTHON;
  const venv = fileURLToPath(new URL('../.venv/bin/python', import.meta.url));
  return existsSync(venv) ? venv : 'python3';
}

/** The `format` that `make-tiny-model` records in `openclaw_tiny_model.json` (engine/openclaw_engine/tiny_model.py). */
export const TINY_MODEL_FORMAT = 2;

const TinyModelProvenance = z.looseObject({ format: z.number().int().optional() });

/**
 * Writes the tiny random Hugging Face model folder (`make-tiny-model`: Qwen3 architecture, a BPE tokenizer trained
 * in code, 131072-token context, head_dim 64 so vLLM serves it too) unless one is already there. A folder an older
 * version wrote (4096-token context, byte-level tokenizer) is refused with what to do, never silently served.
 */
export async function makeTinyModel(dir: string, seed = 0, headDim = 64): Promise<string> {
  if (existsSync(resolve(dir, 'config.json'))) {
    await assertCurrentTinyModel(dir);
    return dir;
  }
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

/**
 * Writes the tiny random vision-language model folder (`make-tiny-vlm`: Qwen2.5-VL architecture, the tiny
 * model's tokenizer with the vision tokens, a 56x56 image is 4 image tokens) unless one is already there.
 */
export async function makeTinyVlm(dir: string, seed = 0): Promise<string> {
  if (existsSync(resolve(dir, 'config.json'))) return dir;
  await execFileAsync(enginePython(), [
    '-m',
    'openclaw_engine',
    'make-tiny-vlm',
    dir,
    '--seed',
    String(seed),
  ]);
  return dir;
}

async function assertCurrentTinyModel(dir: string): Promise<void> {
  const file = resolve(dir, 'openclaw_tiny_model.json');
  if (!existsSync(file)) return; // a model folder of the user's own
  const provenance = TinyModelProvenance.parse(JSON.parse(await readFile(file, 'utf8')));
  if (provenance.format === TINY_MODEL_FORMAT) return;
  throw new Error(
    `${dir} holds a tiny model an older version built (4096-token context, byte-level tokenizer), which cannot ` +
      'serve an agent such as OpenClaw. Delete that folder to have the current one built (a training run that ' +
      'started from the old one cannot continue on the new one: give it a new run id or data dir).',
  );
}

export interface EngineProcessOptions {
  model: string;
  host?: string;
  /** 0 picks a free port; the real one is read from the engine's `ready` line. */
  port?: number;
  trainer?: boolean;
  loraRank?: number;
  /** LoRA rank of the tenants' adapter trainers (`--adapter-rank`; with `trainer`). */
  adapterRank?: number;
  /** Adapters served at once (`--max-loras`). */
  maxLoras?: number;
  device?: 'cpu' | 'cuda';
  /** The `weight_version` the engine reports before any update (default "0"). */
  weightVersion?: string;
  readyTimeoutMs?: number;
  /** Receives every line the engine prints (after `ready` too). */
  onLine?: (line: string) => void;
  /**
   * Folders checkpoints and published weights may be written and read in (`--checkpoint-root`). Default: the
   * folder holding the model, the project's layout (`<dataDir>/tiny-model` beside `<dataDir>/checkpoints`).
   */
  checkpointRoots?: string[];
  /** Further folders weights may be loaded from (`--model-root`). */
  modelRoots?: string[];
  /** Every log-prob at temperature 1, sampled and prompt alike (`--return-original-logprob`). */
  originalLogprobs?: boolean;
  /** Added to this process's environment (the engine's token: security/engine-token.ts `engineAccessEnv`). */
  env?: Record<string, string>;
  /** The request body limit (`--max-body-mb`; the engine's default 64). */
  maxBodyMb?: number;
}

export type EngineProcess = ReadyProcess;

/** Starts `python -m openclaw_engine serve` and resolves once it prints `ready http://HOST:PORT`. */
export function startReferenceEngine(options: EngineProcessOptions): Promise<EngineProcess> {
  const args = ['-m', 'openclaw_engine', 'serve', '--model', options.model];
  args.push('--host', options.host ?? '127.0.0.1', '--port', String(options.port ?? 0));
  if (options.trainer) args.push('--trainer');
  if (options.loraRank) args.push('--lora-rank', String(options.loraRank));
  if (options.trainer && options.adapterRank) args.push('--adapter-rank', String(options.adapterRank));
  if (options.maxLoras) args.push('--max-loras', String(options.maxLoras));
  if (options.device) args.push('--device', options.device);
  if (options.weightVersion) args.push('--weight-version', options.weightVersion);
  if (options.maxBodyMb !== undefined) args.push('--max-body-mb', String(options.maxBodyMb));
  if (options.originalLogprobs) args.push('--return-original-logprob');
  for (const root of options.checkpointRoots ?? [dirname(resolve(options.model))])
    args.push('--checkpoint-root', resolve(root));
  for (const root of options.modelRoots ?? []) args.push('--model-root', resolve(root));
  return startReadyLineProcess(enginePython(), args, {
    name: 'engine',
    ...(options.env && { env: options.env }),
    readyTimeoutMs: options.readyTimeoutMs ?? 120_000,
    onLine: options.onLine,
  });
}
