// Where the dashboard reads from: the sample store (lineage, samples, turns, feedback) and the Temporal client
// the gateway already has (the runs' status queries). No state of its own beyond caches.

import type { Client } from '@temporalio/client';
import type { AdapterSettings } from '../../core/tenant-adapters.js';
import type { SampleStore } from '../../store/sample-store.js';

export interface DashboardSources {
  store: SampleStore;
  /** Absent: the runs' live status is not shown (lineage in the store still is). */
  temporal?: Client;
  /** The shared training run every tenant's aggregate plots come from. */
  runId: string;
  adapters: AdapterSettings;
}

/** How long a status query may take before the page goes on without it (a run with no worker never answers). */
export const QUERY_TIMEOUT_MS = 3_000;

export async function withTimeout<T>(promise: Promise<T>, ms = QUERY_TIMEOUT_MS): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  try {
    return await Promise.race([promise.catch(() => null), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
