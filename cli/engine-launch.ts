import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { referenceTrainerUrl } from '../activities/trainer-backends/trainer-from-config.js';
import { adapterFolder, type RunRecord } from '../activities/training-activities.js';
import type { OpenClawConfig } from '../core/config.js';
import { hasOwnAdapter, parseAdapterRunId } from '../core/tenant-adapters.js';
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
import type { SampleStore } from '../store/sample-store.js';
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
export async function latestPublished(
  config: OpenClawConfig,
  runId = config.runId,
): Promise<LineageEntry | null> {
  const store = storeFromConfig(config);
  try {
    return await newestOf(store, runId);
  } finally {
    await store.close?.();
  }
}

async function newestOf(store: SampleStore, runId: string): Promise<LineageEntry | null> {
  const run = await store.get<RunRecord>(runRecordKey(runId));
  // The trailing `/`: `lineage/default` must not also list `lineage/default~alice`, a tenant's adapter run.
  const keys = await store.list(`lineage/${encodeURIComponent(runId)}/`);
  let latest: LineageEntry | null = null;
  for (const key of keys) {
    const entry = await store.get<LineageEntry>(key);
    if (!entry || entry.incarnation !== run?.incarnation) continue;
    if (latest === null || entry.version > latest.version) latest = entry;
  }
  return latest;
}

/**
 * The newest published version of every tenant's adapter run (core/tenant-adapters.ts) of this run id whose
 * tenant still has an adapter, so a restarted engine serves each tenant what its run last published.
 */
export async function latestAdapters(
  config: OpenClawConfig,
): Promise<{ runId: string; tenant: string; latest: LineageEntry }[]> {
  if (config.adapters.tenants.length === 0) return [];
  const store = storeFromConfig(config);
  try {
    const found: { runId: string; tenant: string; latest: LineageEntry }[] = [];
    // Listed whole: the file store lists folders, not key prefixes (one record per run: a short list).
    for (const key of await store.list('runs')) {
      const runId = decodeURIComponent(key.slice('runs/'.length));
      const adapter = parseAdapterRunId(runId);
      if (adapter === null || adapter.sharedRunId !== config.runId) continue;
      if (!hasOwnAdapter(config.adapters, adapter.tenant)) continue;
      const latest = await newestOf(store, runId);
      if (latest) found.push({ runId, tenant: adapter.tenant, latest });
    }
    return found;
  } finally {
    await store.close?.();
  }
}

/** vLLM takes these max LoRA ranks only: the smallest that holds `rank`. */
function vllmLoraRank(rank: number): number {
  return [1, 8, 16, 32, 64, 128, 256, 320, 512].find((allowed) => allowed >= rank) ?? rank;
}

/** The base model an adapter was trained on, as PEFT recorded it (`base_model_name_or_path`). */
async function adapterBase(folder: string): Promise<string | null> {
  try {
    const config = JSON.parse(await readFile(join(folder, 'adapter_config.json'), 'utf8')) as {
      base_model_name_or_path?: unknown;
    };
    return typeof config.base_model_name_or_path === 'string' ? config.base_model_name_or_path : null;
  } catch {
    return null;
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
    ...(config.adapters.tenants.length > 0 && {
      maxLoras: config.adapters.maxLoaded,
      ...(trainer && { adapterRank: config.adapters.rank }),
    }),
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
          ...(config.adapters.tenants.length > 0 && {
            lora: { maxRank: vllmLoraRank(config.adapters.rank), maxLoras: config.adapters.maxLoaded },
          }),
          apiKey: engineToken(config),
          onLine: log,
        }),
      );
    }
    const engine = processes.at(-1) as EngineProcess;
    const latest = options.resume === false ? null : await latestPublished(config);
    const serving = createEngineAdapter(config.engine.kind, engine.url, withEngineAuth(config));
    if (latest) await serving.publishWeights({ path: latest.checkpoint, version: String(latest.version) });
    // Every tenant's adapter, at its run's newest version (onBaseChange `reset`: none of another base).
    if (options.resume !== false)
      for (const adapter of await latestAdapters(config)) {
        const base = await adapterBase(adapterFolder(adapter.latest.checkpoint));
        if (config.adapters.onBaseChange === 'reset' && base !== null && resolve(base) !== resolve(model)) {
          log(
            `not serving ${adapter.tenant}'s adapter v${adapter.latest.version}: it was trained on ${base}`,
          );
          continue;
        }
        await serving.loadLoraAdapter({
          name: adapter.tenant,
          path: adapterFolder(adapter.latest.checkpoint),
          version: String(adapter.latest.version),
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
