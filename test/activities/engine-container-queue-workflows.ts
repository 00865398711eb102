// A workflow of the control side's kind, for the GPU host's queue test: asks `gpu-<hostId>` for the
// engine's status, then for a restart.
import { proxyActivities } from '@temporalio/workflow';
import type { EngineStatus } from '../../activities/engine-container.js';
import type { EngineContainerActivities } from '../../activities/engine-container-activities.js';

export async function askGpuHostWorkflow(input: {
  hostId: string;
}): Promise<{ before: EngineStatus; after: EngineStatus }> {
  const gpu = proxyActivities<EngineContainerActivities>({
    taskQueue: `gpu-${input.hostId}`,
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { maximumAttempts: 1 },
  });
  const before = await gpu.engineStatus();
  const after = await gpu.restartEngine();
  return { before, after };
}
