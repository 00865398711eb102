// A training run's two workers for a test: the control worker (the run's workflows) and the trainer worker (its
// trainer backend), both running on one config and store until `stop()`.

import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { OpenClawConfig } from '../../core/config.js';
import type { SampleStore } from '../../store/sample-store.js';
import { createTrainerWorker } from '../../workers/trainer-worker.js';
import { createTestControlWorker } from './workflow-bundle.js';

export interface RunWorkers {
  /** The trainer backend's name (`fireworks`, `tinker`, ...), as the trainer worker built it. */
  trainerName: string;
  stop(): Promise<void>;
}

export async function startRunWorkers(
  config: OpenClawConfig,
  env: TestWorkflowEnvironment,
  store: SampleStore,
): Promise<RunWorkers> {
  const control = await createTestControlWorker(config, env, { store });
  const trainer = await createTrainerWorker(config, env.nativeConnection, { store });
  const workers = [control, trainer.worker].map((worker) => ({ worker, running: worker.run() }));
  return {
    trainerName: trainer.trainer.name,
    async stop() {
      for (const { worker } of workers) worker.shutdown();
      await Promise.all(workers.map(({ running }) => running.catch(() => undefined)));
    },
  };
}
