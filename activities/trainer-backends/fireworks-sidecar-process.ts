import { resolve } from 'node:path';
import { type ReadyProcess, startReadyLineProcess } from '../../engines/ready-line-process.js';
import { enginePython } from '../../engines/reference-engine-process.js';

export interface FireworksSidecarOptions {
  /** Fireworks' model name, e.g. `accounts/fireworks/models/qwen3-8b`. */
  baseModel: string;
  /** The training shape a new trainer job is created on (`ts-…`). */
  trainingShape?: string;
  /** The deployment each published version is hot-loaded into; none: exports are saved, never served. */
  deployment?: string;
  /** A running trainer job to reconnect to instead of creating one. */
  trainerJob?: string;
  loraRank?: number;
  /** The base model's tokenizer and chat template (a folder or a Hugging Face id): the sidecar then also serves
   * the reference engine's chat routes, sampling on the deployment. */
  tokenizer?: string;
  /** The deployment's inference gateway (default: the SDK's, the API URL). */
  inferenceUrl?: string;
  servedModelName?: string;
  host?: string;
  /** 0 picks a free port; the real one is read from the `ready` line. */
  port?: number;
  /** A module with the SDK surface instead of `fireworks.training.sdk` (tests pass their double). */
  sdkModule?: string;
  /** The Python that runs it (default the engine's, engines/reference-engine-process.ts). */
  python?: string;
  /** Must hold FIREWORKS_API_KEY. */
  env?: NodeJS.ProcessEnv;
  readyTimeoutMs?: number;
  /** Folders checkpoints and exports may be written in (`--checkpoint-root`); none refuses every path. */
  checkpointRoots?: string[];
}

export type FireworksSidecarProcess = ReadyProcess;

/** Starts `python -m openclaw_engine.fireworks_sidecar` and resolves once it prints `ready http://HOST:PORT`. */
export function startFireworksSidecar(options: FireworksSidecarOptions): Promise<FireworksSidecarProcess> {
  const args = ['-m', 'openclaw_engine.fireworks_sidecar', '--base-model', options.baseModel];
  args.push('--host', options.host ?? '127.0.0.1', '--port', String(options.port ?? 0));
  if (options.trainingShape) args.push('--training-shape', options.trainingShape);
  if (options.deployment) args.push('--deployment', options.deployment);
  if (options.trainerJob) args.push('--trainer-job', options.trainerJob);
  if (options.loraRank !== undefined) args.push('--lora-rank', String(options.loraRank));
  if (options.tokenizer) args.push('--tokenizer', options.tokenizer);
  if (options.inferenceUrl) args.push('--inference-url', options.inferenceUrl);
  if (options.servedModelName) args.push('--served-model-name', options.servedModelName);
  if (options.sdkModule) args.push('--sdk-module', options.sdkModule);
  for (const root of options.checkpointRoots ?? []) args.push('--checkpoint-root', resolve(root));
  return startReadyLineProcess(options.python ?? enginePython(), args, {
    name: 'Fireworks sidecar',
    env: options.env,
    readyTimeoutMs: options.readyTimeoutMs ?? 60_000,
  });
}
