import { join } from 'node:path';
import { PolicyEngineClient } from '../activities/policy-engine-client.js';
import { FileSampleStore } from '../activities/sample-store.js';
import type { RunRecord } from '../activities/training-activities.js';
import type { OpenClawConfig } from '../core/config.js';
import { runRecordKey } from '../core/training-keys.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../workers/reference-engine-process.js';
import type { LineageEntry } from '../workflows/training-signals.js';

/** The model folder to serve: the configured one, else a tiny random model built once in the data dir. */
export async function resolveModel(config: OpenClawConfig): Promise<string> {
  if (config.engine.model) return config.engine.model;
  return makeTinyModel(join(config.dataDir, 'tiny-model'));
}

/**
 * The newest checkpoint published by the run id's current incarnation (`runs/<runId>` names it; runs from
 * before incarnations have none, and their entries have no incarnation either). Another incarnation's
 * versions are never returned: a run id started again must not serve the weights of the one before.
 */
export async function latestPublished(config: OpenClawConfig): Promise<LineageEntry | null> {
  const store = new FileSampleStore(join(config.dataDir, 'store'));
  const run = await store.get<RunRecord>(runRecordKey(config.runId));
  const keys = await store.list(`lineage/${encodeURIComponent(config.runId)}`);
  let latest: LineageEntry | null = null;
  for (const key of keys) {
    const entry = await store.get<LineageEntry>(key);
    if (!entry || entry.incarnation !== run?.incarnation) continue;
    if (latest === null || entry.version > latest.version) latest = entry;
  }
  return latest;
}

export interface LaunchOptions {
  /**
   * Load the run's newest published version (default). False when the run is about to start anew (its
   * workflow is not running): the engine then serves the base, which is what the new incarnation trains from.
   */
  resume?: boolean;
}

/**
 * Starts the reference engine (serving + trainer) on the engine URL's host and port. When the run already
 * published versions, the newest one is loaded before the engine is reported ready, so a restart serves what
 * the run last published; the trainer resumes from the same checkpoint on its next step.
 */
export async function launchEngine(
  config: OpenClawConfig,
  log: (line: string) => void = () => {},
  options: LaunchOptions = {},
): Promise<{ engine: EngineProcess; model: string; version: number }> {
  const url = new URL(config.engine.url);
  const model = await resolveModel(config);
  const engine = await startReferenceEngine({
    model,
    host: url.hostname,
    port: Number(url.port || 30000),
    trainer: true,
    device: config.engine.device,
    loraRank: config.engine.loraRank,
    onLine: log,
    readyTimeoutMs: 600_000,
  });
  const latest = options.resume === false ? null : await latestPublished(config);
  if (latest) {
    await new PolicyEngineClient(engine.url).updateWeightsFromDisk(latest.checkpoint, String(latest.version));
  }
  return { engine, model, version: latest?.version ?? 0 };
}

/** Whether the judge or the teacher is the frozen judge engine (then `dev` must make sure one serves). */
export function usesJudgeEngine(config: OpenClawConfig): boolean {
  const frozen = config.judgeEngine.url;
  return (
    config.judge.baseUrl.replace(/\/+$/, '') === `${frozen}/v1` ||
    config.teacher.url.replace(/\/+$/, '') === frozen
  );
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
  const url = new URL(config.judgeEngine.url);
  const model = config.judgeEngine.model || (await resolveModel(config));
  const engine = await startReferenceEngine({
    model,
    host: url.hostname,
    port: Number(url.port || 30001),
    device: config.engine.device,
    onLine: log,
    readyTimeoutMs: 600_000,
  });
  return { engine, model };
}
