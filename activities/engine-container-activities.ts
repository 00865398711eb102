// What the control side may ask a GPU host, on the host's own queue `gpu-<hostId>`: the engine's status,
// and a restart (a fresh container, returning once it is healthy again).

import type { EngineStatus, EngineSupervisor } from './engine-container.js';
import { withHeartbeats } from './heartbeats.js';

export function createEngineContainerActivities(supervisor: EngineSupervisor) {
  return {
    async engineStatus(): Promise<EngineStatus> {
      return supervisor.status();
    },

    /** Give it a heartbeat timeout: a start loads the model and may take minutes. */
    async restartEngine(): Promise<EngineStatus> {
      return withHeartbeats('restarting the policy engine', () => supervisor.restart());
    },
  };
}

export type EngineContainerActivities = ReturnType<typeof createEngineContainerActivities>;
