import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { OpenClawConfig } from '../core/config.js';
import { trainingWorkflowId } from '../temporal/workflow-ids.js';
import { startTrainingRun } from '../temporal/workflow-starts.js';
import { trainingInputFromConfig } from '../workers/control-worker.js';

/** Starts `training-<runId>` unless it is already running ("already started" counts as success). */
export async function ensureTrainingRun(
  client: Client,
  config: OpenClawConfig,
  policyVersion: number,
): Promise<'started' | 'running'> {
  const input = { ...trainingInputFromConfig(config), initialPolicyVersion: policyVersion };
  const { started } = await startTrainingRun(client, config.temporal.taskQueue, input);
  return started ? 'started' : 'running';
}

/** Whether `training-<runId>` is running (false: never started, or closed, so a start begins it anew). */
export async function trainingRunIsRunning(client: Client, runId: string): Promise<boolean> {
  try {
    const { status } = await client.workflow.getHandle(trainingWorkflowId(runId)).describe();
    return status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}
