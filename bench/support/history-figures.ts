// What a fan-out run left in the Temporal server: history events and bytes of every execution (from the
// visibility store), and payload bytes (inputs, results, activity arguments) read from the histories
// themselves, for the tree (training run and batches) and for a sample of rollouts.

import type { Client } from '@temporalio/client';
import type { HistoryEvent } from './history.js';

export interface HistoryTotals {
  executions: number;
  events: number;
  bytes: number;
  /** Every execution's workflow id. */
  ids: string[];
}

/** Totals over every execution in the namespace once none is running (visibility catches up a little later). */
export async function historyTotals(client: Client, expectAtLeast: number): Promise<HistoryTotals> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const totals: HistoryTotals = { executions: 0, events: 0, bytes: 0, ids: [] };
    let running = 0;
    for await (const execution of client.workflow.list()) {
      totals.executions++;
      totals.ids.push(execution.workflowId);
      totals.events += execution.historyLength;
      totals.bytes += execution.historySize ?? 0;
      if (execution.status.name === 'RUNNING') running++;
    }
    if ((running === 0 && totals.executions >= expectAtLeast) || Date.now() > deadline) return totals;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** Bytes of every payload in the events (data plus metadata): what workflows and activities carried. */
export function payloadBytes(events: readonly HistoryEvent[]): number {
  let total = 0;
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    if (value instanceof Uint8Array) return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    const record = value as Record<string, unknown>;
    if (record.data instanceof Uint8Array && record.metadata && typeof record.metadata === 'object') {
      total += record.data.length;
      for (const meta of Object.values(record.metadata as Record<string, unknown>))
        if (meta instanceof Uint8Array) total += meta.length;
      return;
    }
    for (const child of Object.values(record)) visit(child);
  };
  visit(events);
  return total;
}

/** Payload bytes of one workflow's history. */
export async function workflowPayloadBytes(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return payloadBytes(history.events ?? []);
}
