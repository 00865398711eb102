// A GPU host: keeps one policy engine container up (engine-container.ts) and, when given a Temporal
// connection, serves `engineStatus` and `restartEngine` on the host's queue `gpu-<hostId>`.
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import type { EngineSupervisor } from '../activities/engine-container.js';
import { createEngineContainerActivities } from '../activities/engine-container-activities.js';
import { gpuTaskQueue } from '../temporal/task-queues.js';
import { validHostId } from './env-worker.js';

export interface GpuWorkerOptions {
  supervisor: EngineSupervisor;
  /** Stable host id; the queue is `gpu-<hostId>`. */
  hostId: string;
  /** Without one, the host only supervises its engine. */
  connection?: NativeConnection;
  namespace?: string;
  /** Extra worker options (interceptors, plugins). */
  workerOptions?: Partial<WorkerOptions>;
}

export interface GpuWorker {
  hostId: string;
  taskQueue: string;
  worker: Worker | null;
  /** Starts the engine (resolving the first start's failure as a rejection), then serves until `shutdown`. */
  run(): Promise<void>;
  /** Stops the worker, then the engine (its container is removed). */
  shutdown(): Promise<void>;
}

export async function createGpuWorker(options: GpuWorkerOptions): Promise<GpuWorker> {
  const hostId = validHostId(options.hostId);
  const taskQueue = gpuTaskQueue(hostId);
  const worker = options.connection
    ? await Worker.create({
        connection: options.connection,
        namespace: options.namespace ?? 'default',
        taskQueue,
        activities: createEngineContainerActivities(options.supervisor),
        ...options.workerOptions,
      })
    : null;
  let stop: () => void = () => undefined;
  let shuttingDown = false;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  let running: Promise<void> | null = null;
  return {
    hostId,
    taskQueue,
    worker,
    run() {
      running = (async () => {
        await options.supervisor.start();
        if (shuttingDown) return;
        await (worker ? worker.run() : stopped);
      })();
      return running;
    },
    async shutdown() {
      shuttingDown = true;
      stop();
      if (worker?.getState() === 'RUNNING') worker.shutdown();
      // Stopping the engine also ends a start still waiting for health.
      await options.supervisor.stop();
      await running?.catch(() => undefined);
    },
  };
}
