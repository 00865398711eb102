import { join, resolve } from 'node:path';
import { referenceTrainerUrl } from '../activities/trainer-backends/trainer-from-config.js';
import type { RunRecord } from '../activities/training-activities.js';
import type { OpenClawConfig } from '../core/config.js';
import { runRecordKey } from '../core/training-keys.js';
import { createEngineAdapter, withEngineAuth } from '../engines/engine-adapters.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../engines/reference-engine-process.js';
import { ensureVllmInstalled, startVllm } from '../engines/vllm-process.js';
import { splitArgs } from '../engines/vllm-server-args.js';
import { engineAccessEnv, engineToken } from '../security/engine-token.js';
import { isLoopbackHost } from '../security/loopback-host.js';
import { storeFromConfig } from '../store/store-from-config.js';
import type { LineageEntry } from '../workflows/training-signals.js';

/** The name vLLM answers to when the project starts it (the judge's default model name too). */
export const SERVED_MODEL_NAME = 'default';

/**
 * The model folder to serve: the configured one, else a tiny random model built once in the data dir (with
 * the head size vLLM's CPU attention accepts when vLLM serves it).
 */
export async function resolveModel(config: OpenClawConfig): Promise<string> {
  if (config.engine.model) return config.engine.model;
  if (config.engine.kind === 'vllm') return makeTinyModel(join(config.dataDir, 'tiny-model-h64'), 0, 64);
  return makeTinyModel(join(config.dataDir, 'tiny-model'));
}

/**
 * The newest checkpoint published by the run id's current incarnation (`runs/<runId>` names it; runs from
 * before incarnations have none, and their entries have no incarnation either). Another incarnation's
 * versions are never returned: a run id started again must not serve the weights of the one before.
 */
export async function latestPublished(config: OpenClawConfig): Promise<LineageEntry | null> {
  const store = storeFromConfig(config);
  try {
    const run = await store.get<RunRecord>(runRecordKey(config.runId));
    const keys = await store.list(`lineage/${encodeURIComponent(config.runId)}`);
    let latest: LineageEntry | null = null;
    for (const key of keys) {
      const entry = await store.get<LineageEntry>(key);
      if (!entry || entry.incarnation !== run?.incarnation) continue;
      if (latest === null || entry.version > latest.version) latest = entry;
    }
    return latest;
  } finally {
    await store.close?.();
  }
}

export interface LaunchOptions {
  /**
   * Load the run's newest published version (default). False when the run is about to start anew (its
   * workflow is not running): the engine then serves the base, which is what the new incarnation trains from.
   */
  resume?: boolean;
}

export interface LaunchedEngine {
  /** Every process started, in start order (stop them in reverse). */
  processes: EngineProcess[];
  /** The policy engine's URL. */
  url: string;
  /** The reference trainer's URL, when one was started beside another engine kind. */
  trainerUrl: string | null;
  model: string;
  version: number;
}

function hostAndPort(url: string, fallbackPort: number): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port || fallbackPort) };
}

/**
 * The reference engine of `model` at `url` on the config's device: serving and training (with the config's LoRA
 * rank), or serving only (the frozen judge engine); with the config's token, and the folders its requests may
 * name: checkpoints under `<dataDir>/checkpoints`, weights also from the trainer's shared folder (slime's).
 */
function startReferenceAt(
  config: OpenClawConfig,
  url: string,
  model: string,
  log: (line: string) => void,
  trainer = true,
) {
  const { host, port } = hostAndPort(url, 30000);
  return startReferenceEngine({
    model,
    host,
    port,
    trainer,
    device: config.engine.device,
    ...(trainer && { loraRank: config.engine.loraRank }),
    onLine: log,
    readyTimeoutMs: 600_000,
    checkpointRoots: [join(config.dataDir, 'checkpoints')],
    modelRoots: [resolve(config.trainer.sharedDir || join(config.dataDir, 'trainer'))],
    env: engineAccessEnv(config),
  });
}

/** A reference engine with the trainer, for the reference backend beside an engine that does not train. */
export function startTrainerBeside(config: OpenClawConfig, model: string, log: (line: string) => void) {
  return startReferenceAt(config, referenceTrainerUrl(config), model, log);
}

/**
 * Starts the policy engine of `engine.kind` on the engine URL's host and port: the reference engine (serving
 * and training), or vLLM with a reference trainer on the next port (for the reference trainer backend).
 * When the run already published versions, the newest one is loaded before the engine is reported ready,
 * so a restart serves what the run last published; the trainer resumes from the same checkpoint on its next
 * step. SGLang is started by `worker gpu` or compose's gpu profile, not here.
 */
export async function launchEngine(
  config: OpenClawConfig,
  log: (line: string) => void = () => {},
  options: LaunchOptions = {},
): Promise<LaunchedEngine> {
  const { host, port } = hostAndPort(config.engine.url, 30000);
  // The reference engine refuses this itself; vLLM would serve anyone who reaches it.
  if (
    config.engine.kind === 'vllm' &&
    !engineToken(config) &&
    !config.engine.allowNoToken &&
    !isLoopbackHost(host)
  )
    throw new Error(
      `refusing to start vLLM on ${host} without a token: set engine.token (OPENCLAW_ENGINE_TOKEN or OPENCLAW_ENGINE_TOKEN_FILE), listen on 127.0.0.1, or set engine.allowNoToken if the network is yours alone`,
    );
  const model = await resolveModel(config);
  const processes: EngineProcess[] = [];
  let trainerUrl: string | null = null;
  try {
    if (config.engine.kind === 'sglang')
      throw new Error(
        'dev and engine do not start SGLang: run it on a GPU host (`worker gpu`, or compose with the gpu profile) and point OPENCLAW_ENGINE_URL at it',
      );
    if (config.engine.kind === 'reference') {
      processes.push(await startReferenceAt(config, config.engine.url, model, log));
    } else {
      ensureVllmInstalled(log);
      if (config.trainer.backend === 'reference') {
        const trainer = await startTrainerBeside(config, model, log);
        processes.push(trainer);
        trainerUrl = trainer.url;
      }
      processes.push(
        await startVllm({
          model,
          servedModelName: SERVED_MODEL_NAME,
          host,
          port,
          device: config.engine.device,
          extraArgs: splitArgs(config.engine.args),
          apiKey: engineToken(config),
          onLine: log,
        }),
      );
    }
    const engine = processes.at(-1) as EngineProcess;
    const latest = options.resume === false ? null : await latestPublished(config);
    if (latest) {
      await createEngineAdapter(config.engine.kind, engine.url, withEngineAuth(config)).publishWeights({
        path: latest.checkpoint,
        version: String(latest.version),
      });
    }
    return { processes, url: engine.url, trainerUrl, model, version: latest?.version ?? 0 };
  } catch (error) {
    for (const started of processes.reverse()) await started.stop().catch(() => undefined);
    throw error;
  }
}

/** Whether the judge or the teacher is the frozen judge engine (then `dev` must make sure one serves). */
export function usesJudgeEngine(config: OpenClawConfig): boolean {
  const frozen = config.judgeEngine.url;
  const judge = config.judge.baseUrl.replace(/\/+$/, '');
  return judge === `${frozen}/v1` || config.teacher.url.replace(/\/+$/, '') === frozen;
}

/**
 * Starts the frozen judge engine: a reference engine serving the base checkpoint (or `judgeEngine.model`) on
 * `judgeEngine.url`, without a trainer. Nothing ever publishes to it, so judging and teaching never drift
 * with the policy (the original's PRM engine, never weight-updated).
 */
export async function launchJudgeEngine(
  config: OpenClawConfig,
  log: (line: string) => void = () => {},
): Promise<{ engine: EngineProcess; model: string }> {
  const model = config.judgeEngine.model || (await resolveModel(config));
  const engine = await startReferenceAt(config, config.judgeEngine.url, model, log, false);
  return { engine, model };
}
