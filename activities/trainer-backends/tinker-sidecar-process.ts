import { resolve } from 'node:path';
import { type ReadyProcess, startReadyLineProcess } from '../../engines/ready-line-process.js';
import { enginePython } from '../../engines/reference-engine-process.js';

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
  /** Folders checkpoints and exports may be written in (`--checkpoint-root`); none refuses every path. */
  checkpointRoots?: string[];
}

export type TinkerSidecarProcess = ReadyProcess;

/** Starts `python -m openclaw_engine.tinker_sidecar` and resolves once it prints `ready http://HOST:PORT`. */
export function startTinkerSidecar(options: TinkerSidecarOptions): Promise<TinkerSidecarProcess> {
  const args = ['-m', 'openclaw_engine.tinker_sidecar', '--base-model', options.baseModel];
  args.push('--host', options.host ?? '127.0.0.1', '--port', String(options.port ?? 0));
  if (options.loraRank) args.push('--lora-rank', String(options.loraRank));
  if (options.tokenizer) args.push('--tokenizer', options.tokenizer);
  if (options.trainOnly) args.push('--no-serve');
  if (options.lossFn) args.push('--loss-fn', options.lossFn);
  if (options.sdkModule) args.push('--sdk-module', options.sdkModule);
  for (const root of options.checkpointRoots ?? []) args.push('--checkpoint-root', resolve(root));
  return startReadyLineProcess(enginePython(), args, {
    name: 'Tinker sidecar',
    env: options.env,
    readyTimeoutMs: options.readyTimeoutMs ?? 60_000,
  });
}
