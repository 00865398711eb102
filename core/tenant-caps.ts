// Group training: several people's sessions train one policy. A batch takes at most `cap` samples of any one
// tenant while other tenants' samples are waiting, so whoever chats most cannot fill every batch. Samples the
// cap holds back stay in the queue, in order, for later batches: nothing is dropped. When the waiting samples
// of other tenants run out, the batch is topped up with the oldest held-back ones, so a household where only
// one person talks still trains full batches at the usual pace. Pure and deterministic: the training workflow
// forms its batches with it from the sample references it holds (a tenant is read from the sample id).
import { NO_TENANT, tenantOfSession } from './tenant.js';

/** The tenant a sample counts under: its session's tenant, or `-` (Track 2, sessions from before tenants). */
export function tenantOfSample(sampleId: string): string {
  return tenantOfSession(sampleId) ?? NO_TENANT;
}

export interface FormedBatch<T> {
  /** The batch, in queue order. */
  batch: T[];
  /**
   * Per tenant, its samples the cap moved to a later batch: those among the first `batchSize` waiting (the
   * batch without a cap) that are not in this one. Tenants with none are left out.
   */
  heldBack: Record<string, number>;
}

/**
 * The next batch of at most `batchSize` from `waiting` (queue order) with at most `cap` samples per tenant;
 * `cap` 0 (or one at least `batchSize`) takes the first `batchSize`. If the waiting samples within the cap do
 * not fill the batch, the oldest held-back samples fill it (the cap only holds a tenant back while others wait).
 */
export function formCappedBatch<T extends { sampleId: string }>(
  waiting: readonly T[],
  batchSize: number,
  cap: number,
): FormedBatch<T> {
  if (cap <= 0 || cap >= batchSize) return { batch: waiting.slice(0, batchSize), heldBack: {} };
  const taken = new Set<number>();
  const perTenant = new Map<string, number>();
  const skipped: number[] = [];
  for (let i = 0; i < waiting.length && taken.size < batchSize; i++) {
    const tenant = tenantOfSample((waiting[i] as T).sampleId);
    const count = perTenant.get(tenant) ?? 0;
    if (count < cap) {
      perTenant.set(tenant, count + 1);
      taken.add(i);
    } else skipped.push(i);
  }
  // Nobody else is waiting: the oldest held-back samples fill the batch.
  for (const i of skipped) {
    if (taken.size >= batchSize) break;
    taken.add(i);
  }
  const heldBack: Record<string, number> = {};
  for (let i = 0; i < Math.min(batchSize, waiting.length); i++) {
    if (taken.has(i)) continue;
    const tenant = tenantOfSample((waiting[i] as T).sampleId);
    heldBack[tenant] = (heldBack[tenant] ?? 0) + 1;
  }
  return { batch: waiting.filter((_, i) => taken.has(i)), heldBack };
}

/** The loss weight of a tenant's samples: its entry in `weights`, else 1. */
export function tenantWeight(
  weights: Readonly<Record<string, number>> | undefined,
  sampleId: string,
): number {
  return weights?.[tenantOfSample(sampleId)] ?? 1;
}

/** Of `weights`, the entries other than 1 for the tenants in `tenants` (what a version's batch trained with). */
export function weightsUsed(
  weights: Readonly<Record<string, number>> | undefined,
  tenants: Readonly<Record<string, number>>,
): Record<string, number> {
  const used: Record<string, number> = {};
  for (const tenant of Object.keys(tenants).sort()) {
    const weight = weights?.[tenant];
    if (weight !== undefined && weight !== 1) used[tenant] = weight;
  }
  return used;
}
