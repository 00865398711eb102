import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { type Judge, OpenAIJudge } from '../activities/judge-client.js';
import { createScoringActivities } from '../activities/scoring-activities.js';
import type { TrainerBackend } from '../activities/trainer-backend.js';
import { trainerForRun, trainerFromConfig } from '../activities/trainer-backends/trainer-from-config.js';
import { createTrainingActivities } from '../activities/training-activities.js';
import type { OpenClawConfig } from '../core/config.js';
import { gateSettingsOf, optimizerSettingsOf } from '../core/config-schema.js';
import type { Method } from '../core/types.js';
import { policyEngineFromConfig, teacherEngineFromConfig } from '../engines/engine-adapters.js';
import { judgeApiKey } from '../security/engine-token.js';
import type { SampleStore } from '../store/sample-store.js';
import { storeFromConfig } from '../store/store-from-config.js';
import type { TrainingInput } from '../workflows/training-signals.js';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface ControlWorkerDependencies {
  store?: SampleStore;
  judge?: Judge;
  trainer?: TrainerBackend;
}

/** The training run's start input derived from the config (also what the CLI and the UI form send). */
export function trainingInputFromConfig(
  config: OpenClawConfig,
  runId = config.runId,
  method: Method = config.method,
): TrainingInput {
  // Only with an evaluation set, so a run's input stays what it was without the publish gate.
  const gate = gateSettingsOf(config.training.gate);
  return {
    runId,
    method,
    settings: {
      batchSize: config.training.batchSize,
      maxPolicyLag: config.training.maxPolicyLag,
      stalenessPolicy: config.training.stalenessPolicy,
      continueAsNewAfterSteps: config.training.continueAsNewAfterSteps,
      continueAsNewAfterEvents: config.training.continueAsNewAfterEvents,
      keepCheckpoints: config.training.keepCheckpoints,
      ...(method === 'opd' && config.teacher.topK > 0 && { distillTopK: config.teacher.topK }),
      heartbeatTimeoutMs: config.temporal.heartbeatTimeoutMs,
      ...(config.trainer.taskQueue && { trainerTaskQueue: config.trainer.taskQueue }),
      // Only when set, so a run's input stays what it was without group training.
      ...(config.training.maxSamplesPerTenant > 0 && {
        maxSamplesPerTenant: config.training.maxSamplesPerTenant,
      }),
      ...(Object.keys(config.training.tenantWeights).length > 0 && {
        tenantWeights: { ...config.training.tenantWeights },
      }),
      loss: { ...config.loss },
      optimizer: optimizerSettingsOf(config.training),
      ...(gate && { gate }),
    },
  };
}

/**
 * The control worker: sessions, scoring, the training loop and judge calls, on the `control` task queue.
 * Everything it talks to comes from the config unless a test passes its own. It bundles the workflows at
 * `workflowsPath` unless `options.workflowBundle` holds them prebuilt (tests build one bundle per run).
 */
export async function createControlWorker(
  config: OpenClawConfig,
  connection: NativeConnection,
  client: Client,
  deps: ControlWorkerDependencies = {},
  options: Partial<WorkerOptions> = {},
): Promise<Worker> {
  const store = deps.store ?? storeFromConfig(config);
  const engine = policyEngineFromConfig(config);
  const judge =
    deps.judge ??
    new OpenAIJudge({
      baseUrl: config.judge.baseUrl,
      model: config.judge.model,
      apiKey: judgeApiKey(config),
      temperature: config.judge.temperature,
      maxTokens: config.judge.maxTokens,
    });
  const trainer = deps.trainer ?? trainerFromConfig(config);
  const activities = {
    ...createScoringActivities({
      store,
      judge,
      teacher: teacherEngineFromConfig(config),
      teacherTopK: config.teacher.topK,
      judgeVision: config.judge.vision,
      client,
      controlTaskQueue: options.taskQueue ?? config.temporal.taskQueue,
      trainingDefaults: (runId, method) => trainingInputFromConfig(config, runId, method),
    }),
    ...createTrainingActivities({
      store,
      trainer,
      trainerOf: trainerForRun(config, trainer),
      serving: engine,
      checkpointDir: `${config.dataDir}/checkpoints`,
      tensorboardDir: `${config.dataDir}/tensorboard`,
      // The publish gate's `judge` scorer votes with the run's judge.
      judge,
      judgeVotes: config.judge.votes,
    }),
  };
  return Worker.create({
    connection,
    namespace: client.options.namespace,
    taskQueue: config.temporal.taskQueue,
    ...(options.workflowBundle === undefined && { workflowsPath }),
    activities,
    ...options,
  });
}
