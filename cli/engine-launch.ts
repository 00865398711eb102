import { join } from 'node:path';
import { PolicyEngineClient } from '../activities/policy-engine-client.js';
import { FileSampleStore } from '../activities/sample-store.js';
import type { OpenClawConfig } from '../core/config.js';
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

/** The run's newest published checkpoint, from the lineage records in the sample store. */
export async function latestPublished(config: OpenClawConfig): Promise<LineageEntry | null> {
  const store = new FileSampleStore(join(config.dataDir, 'store'));
  const keys = await store.list(`lineage/${encodeURIComponent(config.runId)}`);
  let latest: LineageEntry | null = null;
  for (const key of keys) {
    const entry = await store.get<LineageEntry>(key);
    if (entry && (latest === null || entry.version > latest.version)) latest = entry;
  }
  return latest;
}

/**
 * Starts the reference engine (serving + trainer) on the engine URL's host and port. When the run already
 * published versions, the newest one is loaded before the engine is reported ready, so a restart serves what
 * the run last published; the trainer resumes from the same checkpoint on its next step.
 */
export async function launchEngine(
  config: OpenClawConfig,
  log: (line: string) => void = () => {},
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
  const latest = await latestPublished(config);
  if (latest) {
    await new PolicyEngineClient(engine.url).updateWeightsFromDisk(latest.checkpoint, String(latest.version));
  }
  return { engine, model, version: latest?.version ?? 0 };
}
