// `openclaw-rl worker trainer`: polls the trainer task queue with the configured backend until Ctrl-C.
import { existsSync } from 'node:fs';
import type { NativeConnection } from '@temporalio/worker';
import type { OpenClawConfig } from '../core/config.js';
import { createTrainerWorker } from '../workers/trainer-worker.js';
import type { WorkerTelemetry } from '../workers/worker-telemetry.js';

/** What the worker will train with, in one line (the first thing an operator checks). */
export function describeTrainer(config: OpenClawConfig): string {
  const { trainer } = config;
  switch (trainer.backend) {
    case 'reference':
      return `reference trainer at ${config.engine.url}`;
    case 'slime': {
      const gpus = trainer.gpuIds.length
        ? `GPUs ${trainer.gpuIds.join(',')}`
        : `${trainer.gpus} GPU${trainer.gpus === 1 ? '' : 's'}`;
      return `slime epochs in ${trainer.image} (${trainer.epochCommand} command, ${gpus})`;
    }
    case 'tinker':
      return `Tinker through the sidecar at ${trainer.tinkerUrl || config.engine.url}`;
    case 'fireworks':
      return `Fireworks through the sidecar at ${trainer.fireworksUrl || config.engine.url}`;
  }
}

export async function runTrainerWorker(
  config: OpenClawConfig,
  connection: NativeConnection,
  stopped: Promise<void>,
  telemetry?: WorkerTelemetry,
): Promise<void> {
  // Epoch containers are siblings on the host's Docker engine: a folder inside this container is not theirs.
  if (config.trainer.backend === 'slime' && !config.trainer.sharedDir && existsSync('/.dockerenv'))
    throw new Error(
      'in a container the slime trainer needs OPENCLAW_TRAINER_SHARED_DIR (compose: TRAINER_DIR), a host folder mounted at the same path',
    );
  const { worker, taskQueue, store } = await createTrainerWorker(
    config,
    connection,
    {},
    telemetry?.workerOptions,
  );
  telemetry?.watchTaskQueues(connection.workflowService, config.temporal.namespace, [taskQueue]);
  console.log(
    `trainer worker on task queue ${taskQueue} at ${config.temporal.address}: ${describeTrainer(config)}`,
  );
  if (!config.trainer.taskQueue)
    console.error(
      `note: training runs send their steps here only when started with OPENCLAW_TRAINER_TASK_QUEUE=${taskQueue} (set it for the control worker and \`train start\`)`,
    );
  const running = worker.run();
  await Promise.race([stopped, running]);
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running;
  await store.close?.();
}
