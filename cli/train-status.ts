import type { Client } from '@temporalio/client';
import {
  type TrainingRunStatus,
  trainingStatusQuery,
  trainingWorkflowId,
} from '../workflows/training-signals.js';

export async function readTrainingStatus(client: Client, runId: string): Promise<TrainingRunStatus> {
  return client.workflow.getHandle(trainingWorkflowId(runId)).query(trainingStatusQuery);
}

/** The status as a person reads it. */
export function formatTrainingStatus(status: TrainingRunStatus): string {
  const lines = [
    `run ${status.runId} (${status.method})${status.paused ? ' — PAUSED' : ''}`,
    `policy version   ${status.policyVersion}`,
    `epochs done      ${status.stepsCompleted}${status.lastStepId ? ` (last ${status.lastStepId})` : ''}`,
    `samples waiting  ${status.pendingSamples} of a batch of ${status.settings.batchSize}`,
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
  if (status.lastCheckpoint) lines.push(`last checkpoint  ${status.lastCheckpoint}`);
  return lines.join('\n');
}
