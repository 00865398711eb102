// `openclaw-rl worker trainer`: polls the trainer task queue with the configured backend until Ctrl-C.
import type { NativeConnection } from '@temporalio/worker';
import type { OpenClawConfig } from '../core/config.js';
import { createTrainerWorker } from '../workers/trainer-worker.js';

/** What the worker will train with, in one line (the first thing an operator checks). */
export function describeTrainer(config: OpenClawConfig): string {
  const { trainer } = config;
  switch (trainer.backend) {
    case 'reference':
      return `reference trainer at ${config.engine.url}`;
    case 'slime':
      return `slime epochs in ${trainer.image} (${trainer.epochCommand}, ${trainer.gpus} GPU${trainer.gpus === 1 ? '' : 's'})`;
    case 'tinker':
      return `Tinker through the sidecar at ${trainer.tinkerUrl || config.engine.url}`;
  }
}

export async function runTrainerWorker(
  config: OpenClawConfig,
  connection: NativeConnection,
  stopped: Promise<void>,
): Promise<void> {
  const { worker, taskQueue } = await createTrainerWorker(config, connection);
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
}
