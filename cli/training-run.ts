import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { OpenClawConfig } from '../core/config.js';
import { trainingInputFromConfig } from '../workers/control-worker.js';
import { trainingWorkflowId } from '../workflows/training-signals.js';

/** Starts `training-<runId>` unless it is already running ("already started" counts as success). */
export async function ensureTrainingRun(
  client: Client,
  config: OpenClawConfig,
  policyVersion: number,
): Promise<'started' | 'running'> {
  try {
    await client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(config.runId),
      taskQueue: config.temporal.taskQueue,
      args: [{ ...trainingInputFromConfig(config), initialPolicyVersion: policyVersion }],
    });
    return 'started';
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'running';
    throw error;
  }
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
