// `eval --run <runId> --versions 0,2,4|all`: the checkpoint folders of a run's published versions, from its
// lineage in the sample store (the current incarnation's); version 0 is the base model the run started from.
import { z } from 'zod';
import type { OpenClawConfig } from '../core/config.js';
import type { RunRecord } from '../core/run-record.js';
import { runRecordKey } from '../core/training-keys.js';
import { storeFromConfig } from '../store/store-from-config.js';
import type { LineageEntry } from '../workflows/training-signals.js';
import { resolveModel } from './engine-launch.js';
import type { VersionToEvaluate } from './eval-versions.js';

export const versionsSpecSchema = z
  .string()
  .regex(/^(all|\d+(,\d+)*)$/, '--versions takes numbers separated by commas (0,2,4) or all')
  .transform((spec) => (spec === 'all' ? ('all' as const) : spec.split(',').map(Number)));

/** The versions `spec` names, in its order (all: every published one, ascending, after the base). */
export async function runVersions(
  config: OpenClawConfig,
  runId: string,
  spec: string,
): Promise<VersionToEvaluate[]> {
  const wanted = versionsSpecSchema.safeParse(spec);
  if (!wanted.success) throw new Error(wanted.error.issues[0]?.message ?? 'bad --versions');
  const store = storeFromConfig(config);
  const published = new Map<number, string>();
  try {
    const run = await store.get<RunRecord>(runRecordKey(runId));
    // The trailing `/`: `lineage/default` must not also list a tenant's adapter run, `lineage/default~alice`.
    for (const key of await store.list(`lineage/${encodeURIComponent(runId)}/`)) {
      const entry = await store.get<LineageEntry>(key);
      if (entry && entry.incarnation === run?.incarnation) published.set(entry.version, entry.checkpoint);
    }
  } finally {
    await store.close?.();
  }
  const versions = wanted.data === 'all' ? [0, ...[...published.keys()].sort((a, b) => a - b)] : wanted.data;
  const out: VersionToEvaluate[] = [];
  for (const version of versions) {
    const model = version === 0 ? await resolveModel(config) : published.get(version);
    if (!model)
      throw new Error(
        `run ${runId} has no version ${version} in ${config.dataDir}'s lineage (published: ${[...published.keys()].sort((a, b) => a - b).join(', ') || 'none'})`,
      );
    out.push({ label: `v${version}`, model });
  }
  return out;
}
