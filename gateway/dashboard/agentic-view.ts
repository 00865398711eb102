// Track 2 on the dashboard: the agentic training runs Temporal lists as running, each with its status query's
// answer (phase, rollouts by status, the last step's reward and status counts).

import type { Client } from '@temporalio/client';
import { type AgenticStatus, agenticStatusQuery } from '../../workflows/agentic-signals.js';
import { withTimeout } from './dashboard-sources.js';

/** Runs listed at most (a dashboard, not an inventory). */
const MAX_RUNS = 20;

export async function agenticRuns(temporal: Client | undefined): Promise<AgenticStatus[]> {
  if (!temporal) return [];
  const ids: string[] = [];
  const listing = (async () => {
    for await (const execution of temporal.workflow.list({
      query: "WorkflowType = 'agenticTrainingWorkflow' AND ExecutionStatus = 'Running'",
    })) {
      ids.push(execution.workflowId);
      if (ids.length >= MAX_RUNS) break;
    }
    return ids;
  })();
  // A server without visibility answers nothing: the section stays empty.
  await withTimeout(listing);
  const statuses: AgenticStatus[] = [];
  for (const id of ids) {
    const status = await withTimeout(temporal.workflow.getHandle(id).query(agenticStatusQuery));
    if (status) statuses.push(status);
  }
  return statuses;
}
