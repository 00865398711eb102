// Every task queue the project's workers poll, named after what their activities need (the control side, a
// trainer, one env host's Docker engine, one GPU host's engine container). The config defaults to these names.
import type { OpenClawConfig } from '../core/config.js';
import { DEFAULT_TRAINER_TASK_QUEUE } from '../core/task-queue-names.js';

export { CONTROL_TASK_QUEUE, DEFAULT_TRAINER_TASK_QUEUE, ENV_TASK_QUEUE } from '../core/task-queue-names.js';

/** Where training steps run: the configured queue, else `trainer`. */
export function trainerTaskQueue(config: OpenClawConfig): string {
  return config.trainer.taskQueue || DEFAULT_TRAINER_TASK_QUEUE;
}

/** The queue of one env host's own worker. */
export function envHostTaskQueue(sharedTaskQueue: string, hostId: string): string {
  return `${sharedTaskQueue}-${hostId}`;
}

/** The queue of one GPU host's engine supervisor (`gpu-<hostId>`). */
export function gpuTaskQueue(hostId: string): string {
  return `gpu-${hostId}`;
}
