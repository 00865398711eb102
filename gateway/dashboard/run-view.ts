// A training run as the dashboard shows it: its live status (the workflow's status query) and one point per
// published version of its current incarnation (the lineage entries in the store), each with the statistics of
// the samples it trained on, computed once per version and cached.

import type { RunRecord } from '../../core/run-record.js';
import { adapterRunId, hasOwnAdapter } from '../../core/tenant-adapters.js';
import { runRecordKey } from '../../core/training-keys.js';
import { exclusionKey, sampleKey, type TurnRecord, turnRecordKey } from '../../core/turn-record.js';
import { storeKey } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import {
  type LineageEntry,
  type TrainingRunStatus,
  trainingStatusQuery,
  type VersionEvaluation,
} from '../../workflows/training-signals.js';
import { type DashboardSources, withTimeout } from './dashboard-sources.js';
import { type StoredSampleView, type VersionSampleStats, versionSampleStats } from './version-stats.js';

/** Newest versions a run's view carries: enough for a long run's trend, small enough to poll. */
export const MAX_VERSIONS = 500;
/** Versions whose sample statistics are kept in memory. */
const STATS_CACHE_SIZE = 5_000;

export interface VersionPoint {
  version: number;
  publishedAt: string | null;
  /** `publishedAt`, else (entries written before it was kept) when the version's newest turn was recorded. */
  time: string | null;
  sampleCount: number;
  tenants: Record<string, number> | null;
  metrics: Record<string, number>;
  evaluation: VersionEvaluation | null;
  rollbackOf: number | null;
  stats: VersionSampleStats;
}

export interface RunStatusView {
  method: string;
  policyVersion: number;
  servedVersion: number | null;
  stepsCompleted: number;
  pendingSamples: number;
  samplesTrained: number;
  samplesExcluded: number;
  paused: boolean;
  exclusionsByReason: Record<string, number>;
  feedbackAmended: number;
  feedbackAfterTraining: number;
}

export interface RunView {
  runId: string;
  /** The tenant whose adapter the run trains; null for the shared run. */
  tenant: string | null;
  incarnation: string | null;
  status: RunStatusView | null;
  versions: VersionPoint[];
}

export class RunViews {
  private readonly stats = new Map<string, VersionSampleStats>();

  constructor(private readonly sources: DashboardSources) {}

  /** The runs `tenant` may see: the shared one, and its own adapter's when it has one. */
  async visibleRuns(tenant: string): Promise<{ runId: string; tenant: string | null }[]> {
    const runs: { runId: string; tenant: string | null }[] = [{ runId: this.sources.runId, tenant: null }];
    let own: string | null = null;
    try {
      own = adapterRunId(this.sources.runId, tenant);
    } catch {
      own = null;
    }
    if (own !== null) {
      const configured = hasOwnAdapter(this.sources.adapters, tenant);
      // An adapter run from before the configuration changed still has its lineage.
      if (configured || (await this.lineageKeys(own)).length > 0) runs.push({ runId: own, tenant });
    }
    return runs;
  }

  async view(runId: string, tenant: string | null): Promise<RunView> {
    const status = await this.status(runId);
    const record = await this.sources.store.get<RunRecord>(runRecordKey(runId));
    const incarnation = status?.incarnation ?? record?.incarnation ?? null;
    const keys = (await this.lineageKeys(runId)).filter((key) => key.incarnation === incarnation);
    const chosen = keys.sort((a, b) => a.version - b.version).slice(-MAX_VERSIONS);
    const versions: VersionPoint[] = [];
    for (const key of chosen) {
      const entry = await this.sources.store.get<LineageEntry>(key.key);
      if (!entry || typeof entry.version !== 'number') continue;
      const stats = await this.statsOf(`${runId}/${key.incarnation ?? ''}/${entry.version}`, entry);
      versions.push({
        version: entry.version,
        publishedAt: entry.publishedAt ?? null,
        time: entry.publishedAt ?? stats.latestTurnAt,
        sampleCount: entry.sampleIds?.length ?? 0,
        tenants: entry.tenants ?? null,
        metrics: entry.metrics ?? {},
        evaluation: entry.evaluation ?? null,
        rollbackOf: entry.rollbackOf ?? null,
        stats,
      });
    }
    return { runId, tenant, incarnation, status: status && statusView(status), versions };
  }

  private async status(runId: string): Promise<TrainingRunStatus | null> {
    const temporal = this.sources.temporal;
    if (!temporal) return null;
    return withTimeout(temporal.workflow.getHandle(trainingWorkflowId(runId)).query(trainingStatusQuery));
  }

  /** Lineage keys of every incarnation of `runId` (`lineage/<runId>/[<incarnation>/]v<N>`). */
  private async lineageKeys(
    runId: string,
  ): Promise<{ key: string; incarnation: string | null; version: number }[]> {
    const prefix = storeKey('lineage', runId);
    const found: { key: string; incarnation: string | null; version: number }[] = [];
    for (const key of await this.sources.store.list(prefix)) {
      const parts = key.split('/');
      // A prefix match in a store that lists by string prefix may reach another run's folder.
      if (parts[1] !== encodeURIComponent(runId)) continue;
      const last = decodeURIComponent(parts.at(-1) ?? '');
      const version = /^v(\d+)$/.exec(last)?.[1];
      if (version === undefined || (parts.length !== 3 && parts.length !== 4)) continue;
      const incarnation = parts.length === 4 ? decodeURIComponent(parts[2] as string) : null;
      found.push({ key, incarnation, version: Number(version) });
    }
    return found;
  }

  private async statsOf(cacheKey: string, entry: LineageEntry): Promise<VersionSampleStats> {
    const cached = this.stats.get(cacheKey);
    if (cached) return cached;
    const samples: StoredSampleView[] = [];
    const turnTimes: string[] = [];
    for (const sampleId of entry.sampleIds ?? []) {
      const sample =
        (await this.sources.store.get<StoredSampleView>(sampleKey(sampleId))) ??
        // A sample a refused batch moved to the exclusions keeps its data there.
        (await this.sources.store.get<{ sample?: StoredSampleView }>(exclusionKey(sampleId)))?.sample;
      if (sample) samples.push(sample);
      const turnKey = turnRecordKey(sampleId);
      const recordedAt = turnKey
        ? (await this.sources.store.get<TurnRecord>(turnKey))?.recordedAt
        : undefined;
      if (recordedAt) turnTimes.push(recordedAt);
    }
    const stats = versionSampleStats(entry.version, entry.sampleIds?.length ?? 0, samples, turnTimes);
    if (this.stats.size >= STATS_CACHE_SIZE) {
      const oldest = this.stats.keys().next().value;
      if (oldest !== undefined) this.stats.delete(oldest);
    }
    this.stats.set(cacheKey, stats);
    return stats;
  }
}

function statusView(status: TrainingRunStatus): RunStatusView {
  return {
    method: status.method,
    policyVersion: status.policyVersion,
    servedVersion: status.servedVersion ?? null,
    stepsCompleted: status.stepsCompleted,
    pendingSamples: status.pendingSamples,
    samplesTrained: status.samplesTrained,
    samplesExcluded: status.samplesExcluded,
    paused: status.paused,
    exclusionsByReason: status.exclusionsByReason ?? {},
    feedbackAmended: status.feedback?.amended ?? 0,
    feedbackAfterTraining: status.feedback?.afterTraining.length ?? 0,
  };
}
