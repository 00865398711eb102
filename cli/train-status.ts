import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { OpenClawConfig } from '../core/config.js';
import { formatTenantCounts, samplesByTenant } from '../core/tenant.js';
import { storeFromConfig } from '../store/store-from-config.js';
import { trainingWorkflowId } from '../temporal/workflow-ids.js';
import {
  type LineageEntry,
  lineageQuery,
  type TrainingRunStatus,
  trainingStatusQuery,
} from '../workflows/training-signals.js';
import { type ProgressStream, progressBar } from './progress.js';

export async function readTrainingStatus(client: Client, runId: string): Promise<TrainingRunStatus> {
  return client.workflow.getHandle(trainingWorkflowId(runId)).query(trainingStatusQuery);
}

/** Samples trained per tenant over the versions the run's lineage query lists (its newest 100). */
export interface TrainedByTenant {
  versions: number;
  tenants: Record<string, number>;
  /** Who shaped each of the newest versions (newest first; group training). */
  recent?: VersionContribution[];
}

/** Of one version: its samples per tenant, those the cap per tenant held back, and the weights other than 1. */
export interface VersionContribution {
  version: number;
  tenants: Record<string, number>;
  heldBack?: Record<string, number>;
  weights?: Record<string, number>;
}

/** Versions `train status` shows one by one. */
export const RECENT_VERSIONS_SHOWN = 5;

export function contributionOf(entry: LineageEntry): VersionContribution {
  return {
    version: entry.version,
    tenants: entry.tenants ?? samplesByTenant(entry.sampleIds),
    ...(entry.heldBack && Object.keys(entry.heldBack).length > 0 && { heldBack: entry.heldBack }),
    ...(entry.weights && Object.keys(entry.weights).length > 0 && { weights: entry.weights }),
  };
}

/** `alice 2, bob 2 (held back: alice 2; weights: alice 0.5)`: who shaped one version. */
export function formatContribution(contribution: VersionContribution): string {
  const notes = [
    ...(contribution.heldBack ? [`held back: ${formatTenantCounts(contribution.heldBack)}`] : []),
    ...(contribution.weights ? [`weights: ${formatTenantCounts(contribution.weights)}`] : []),
  ];
  const counts = formatTenantCounts(contribution.tenants);
  return notes.length > 0 ? `${counts} (${notes.join('; ')})` : counts;
}

export async function readTrainedByTenant(client: Client, runId: string): Promise<TrainedByTenant> {
  const entries = await client.workflow.getHandle(trainingWorkflowId(runId)).query(lineageQuery);
  return trainedByTenantOf(entries);
}

export function trainedByTenantOf(entries: readonly LineageEntry[]): TrainedByTenant {
  const tenants: Record<string, number> = {};
  const contributions = entries.map(contributionOf);
  for (const contribution of contributions)
    for (const [tenant, count] of Object.entries(contribution.tenants))
      tenants[tenant] = (tenants[tenant] ?? 0) + count;
  const recent = contributions.slice(-RECENT_VERSIONS_SHOWN).reverse();
  return { versions: entries.length, tenants, recent };
}

export function formatTrainedByTenant(trained: TrainedByTenant): string {
  if (trained.versions === 0) return 'by tenant        nothing trained yet';
  const lines = [
    `by tenant        ${formatTenantCounts(trained.tenants)} (samples of the last ${trained.versions} version${trained.versions === 1 ? '' : 's'})`,
  ];
  for (const contribution of trained.recent ?? [])
    lines.push(`  ${`v${contribution.version}`.padEnd(15)} ${formatContribution(contribution)}`);
  return lines.join('\n');
}

/** What the gateways still have to hand to session workflows (read from the store, so Temporal may be down). */
export interface OutboxStatus {
  depth: number;
  oldestAgeSeconds: number | null;
}

/** The outbox of the configured store, or null with the reason when the store cannot be read. */
export async function readOutboxStatus(config: OpenClawConfig): Promise<OutboxStatus | { error: string }> {
  const store = storeFromConfig(config);
  try {
    const stats = await store.outbox.stats();
    return {
      depth: stats.depth,
      oldestAgeSeconds: stats.oldestCreatedAt === null ? null : (Date.now() - stats.oldestCreatedAt) / 1000,
    };
  } catch (error) {
    return { error: (error as Error).message };
  } finally {
    await store.close?.();
  }
}

export function formatOutboxStatus(outbox: OutboxStatus | { error: string }): string {
  if ('error' in outbox) return `outbox           unreadable: ${outbox.error}`;
  if (outbox.depth === 0) return 'outbox           empty (every recorded turn delivered)';
  const age = outbox.oldestAgeSeconds === null ? '' : `, oldest ${outbox.oldestAgeSeconds.toFixed(1)} s`;
  return `outbox           ${outbox.depth} entr${outbox.depth === 1 ? 'y' : 'ies'} waiting for delivery${age}`;
}

/** The status as a person reads it. */
export function formatTrainingStatus(status: TrainingRunStatus): string {
  const lines = [
    `run ${status.runId} (${status.method})${status.paused ? ' — PAUSED' : ''}`,
    `policy version   ${status.policyVersion}`,
    ...(status.servedVersion !== undefined && status.servedVersion !== status.policyVersion
      ? [`served version   ${status.servedVersion} (the publish gate held newer versions)`]
      : []),
    `epochs done      ${status.stepsCompleted}${status.lastStepId ? ` (last ${status.lastStepId})` : ''}`,
    `samples waiting  ${status.pendingSamples} of a batch of ${status.settings.batchSize}${status.backlogSamples ? ` (${status.backlogSamples} of them in the store)` : ''}`,
    `samples trained  ${status.samplesTrained}`,
    `turns excluded   ${status.samplesExcluded}`,
  ];
  for (const [reason, count] of Object.entries(status.exclusionsByReason).sort()) {
    lines.push(`  ${reason.padEnd(15)} ${count}`);
  }
  if (status.lastMetrics) {
    const shown = ['loss', 'pg_loss', 'pg_clipfrac', 'ppo_kl', 'entropy', 'grad_norm', 'tokens'];
    const parts = shown
      .filter((key) => status.lastMetrics?.[key] !== undefined)
      .map((key) => `${key}=${Number(status.lastMetrics?.[key]).toPrecision(4)}`);
    lines.push(`last metrics     ${parts.join(' ')}`);
  }
  if (status.feedback && (status.feedback.amended > 0 || status.feedback.afterTraining.length > 0)) {
    const after = status.feedback.afterTraining;
    const latest = after.at(-1);
    lines.push(
      `feedback         ${status.feedback.amended} turn${status.feedback.amended === 1 ? '' : 's'} scored again before training; ${after.length} after` +
        (latest ? ` (latest: ${latest.sampleId} trained in v${latest.version})` : ''),
    );
  }
  if (status.lastRefusal)
    lines.push(
      `last refusal     ${status.lastRefusal.stepId}: ${status.lastRefusal.samples} samples excluded: ${status.lastRefusal.detail}`,
    );
  for (const held of status.held ?? []) lines.push(`held             v${held.version}: ${held.reason}`);
  if (status.lastCheckpoint) lines.push(`last checkpoint  ${status.lastCheckpoint}`);
  if (status.incarnation) lines.push(`incarnation      ${status.incarnation}`);
  return lines.join('\n');
}

/** How long a run may take to answer its status query: one whose workers are down never does. */
export const STATUS_QUERY_TIMEOUT_MS = 3_000;

export interface FollowTrainingOptions {
  /** Steps to wait for; absent: follow the run until `stop` resolves (`train status --watch`). */
  steps?: number;
  /** Steps the run had done when the wait began (0 for a run just started); default: its first answer. */
  fromSteps?: number;
  /** The batch size the bar shows until the run first answers (its start input's). */
  batchSize?: number;
  /** Give up after this long (a clear error); absent: no limit. */
  timeoutMs?: number;
  /** Between status queries (default 1 s). */
  intervalMs?: number;
  /** Where the bar goes and whether it may be drawn (progress.ts). */
  progress?: { stream?: ProgressStream; enabled?: boolean };
  /** Stops following (Ctrl-C): a wait ends with an error, a watch with the last status. */
  stop?: Promise<void>;
}

/**
 * Polls the run's `status` query (each within the 3 s query deadline) and draws a bar of the samples
 * buffered toward the next step, with the steps trained and the policy version, until the run has trained
 * `steps` more steps (or, without `steps`, until `stop`). Errors say whether a worker answered at all.
 */
export async function followTrainingRun(
  client: Client,
  runId: string,
  options: FollowTrainingOptions = {},
): Promise<TrainingRunStatus> {
  const workflowId = trainingWorkflowId(runId);
  const handle = client.workflow.getHandle(workflowId);
  const deadline =
    options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
  const bar = progressBar(
    `${workflowId} |{bar}| {value}/{total} samples toward the next step | {steps} | policy v{version}{note}`,
    options.progress,
  );
  let stopped = false;
  const stop = options.stop?.then(() => {
    stopped = true;
  });
  let last: TrainingRunStatus | null = null;
  let from = options.fromSteps;
  let lastAnswerAt = Date.now();
  const trained = (status: TrainingRunStatus) => status.stepsCompleted - (from ?? status.stepsCompleted);
  const payload = (note: string) => ({
    steps:
      options.steps === undefined
        ? `${last?.stepsCompleted ?? '-'} steps trained`
        : `${last ? trained(last) : 0}/${options.steps} steps trained`,
    version: last?.policyVersion ?? '-',
    note,
  });
  try {
    for (;;) {
      // A run that is no longer running (failed, terminated) never trains again: say so instead of waiting.
      const { status, taskQueue } = await handle.describe().catch((error: unknown) => {
        throw error instanceof WorkflowNotFoundError
          ? new Error(`there is no training run ${workflowId}`)
          : error;
      });
      if (status.name !== 'RUNNING') throw new Error(`${workflowId} is ${status.name}`);
      const answer = await client.connection
        .withDeadline(Math.min(Date.now() + STATUS_QUERY_TIMEOUT_MS, deadline), () =>
          handle.query(trainingStatusQuery),
        )
        .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
      let note = '';
      if (answer instanceof Error) {
        // A running run that does not answer has no worker polling its task queue.
        const silentMs = Date.now() - lastAnswerAt;
        if (Date.now() >= deadline && (last === null || silentMs >= STATUS_QUERY_TIMEOUT_MS))
          throw new Error(
            `no worker answered ${workflowId}'s status query for ${Math.round(silentMs / 1000)} s: is a control worker polling task queue "${taskQueue}"? (openclaw-rl worker control)`,
          );
        note = ` | no worker answered for ${Math.round(silentMs / 1000)} s (task queue ${taskQueue})`;
      } else {
        last = answer;
        lastAnswerAt = Date.now();
        from ??= answer.stepsCompleted;
        if (answer.paused) note = ' | PAUSED';
      }
      const batch = last?.settings.batchSize ?? options.batchSize ?? 1;
      bar.update(Math.min(last?.pendingSamples ?? 0, batch), batch, payload(note));
      if (last && options.steps !== undefined && trained(last) >= options.steps) return last;
      if (Date.now() >= deadline && last)
        throw new Error(
          `${workflowId} trained ${trained(last)} of ${options.steps ?? 0} steps within ${Math.round((options.timeoutMs ?? 0) / 1000)} s (${last.pendingSamples} of a batch of ${last.settings.batchSize} samples waiting${last.paused ? ', PAUSED' : ''}); the run goes on`,
        );
      if (stopped) {
        if (options.steps === undefined && last) return last;
        throw new Error(`stopped waiting for ${workflowId}; the run goes on`);
      }
      await pause(Math.min(options.intervalMs ?? 1_000, Math.max(0, deadline - Date.now())), stop);
    }
  } finally {
    bar.stop();
  }
}

/** Waits `ms`, or less when `early` resolves first. */
async function pause(ms: number, early: Promise<void> | undefined): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([new Promise((done) => (timer = setTimeout(done, ms))), ...(early ? [early] : [])]);
  clearTimeout(timer);
}
