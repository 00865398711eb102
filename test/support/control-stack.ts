// The control stack a Track 1 end-to-end test talks to: the sample store, a control worker and the real
// gateway, all on one config, with an OpenAI client of the gateway; and a wait on the training run's status.

import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import type { OpenClawConfig } from '../../core/config.js';
import { type RunningGateway, startGateway } from '../../gateway/main.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { type TrainingRunStatus, trainingStatusQuery } from '../../workflows/training-signals.js';
import { createTestControlWorker } from './workflow-bundle.js';

export interface ControlStack {
  store: FileSampleStore;
  gateway: RunningGateway;
  /** A client of the gateway's OpenAI API (no key: the test gateway listens on loopback). */
  openai: OpenAI;
  /** Stops the gateway, then the worker. */
  close(): Promise<void>;
}

export async function startControlStack(
  config: OpenClawConfig,
  env: TestWorkflowEnvironment,
): Promise<ControlStack> {
  const store = new FileSampleStore(join(config.dataDir, 'store'));
  const worker = await createTestControlWorker(config, env, { store });
  const running = worker.run();
  const stopWorker = async () => {
    worker.shutdown();
    await running.catch(() => undefined);
  };
  let gateway: RunningGateway;
  try {
    gateway = await startGateway(config, { temporal: env.client, logger: false });
  } catch (error) {
    await stopWorker();
    throw error;
  }
  return {
    store,
    gateway,
    openai: new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 }),
    async close() {
      await gateway.close();
      await stopWorker();
    },
  };
}

/** Polls the run's status until `done` holds (the run may not exist yet); throws with the last one after `timeoutMs`. */
export async function untilTrainingStatus(
  client: Client,
  runId: string,
  done: (status: TrainingRunStatus) => boolean,
  timeoutMs = 90_000,
): Promise<TrainingRunStatus> {
  const training = client.workflow.getHandle(trainingWorkflowId(runId));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await training.query(trainingStatusQuery).catch(() => null);
    if (status && done(status)) return status;
    if (Date.now() > deadline) throw new Error(`run ${runId} did not get there: ${JSON.stringify(status)}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}
