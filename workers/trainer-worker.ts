// The trainer worker: training steps and weight publishing on their own task queue (`trainer.taskQueue`), so
// they run on the machine that can train (a GPU host with slime's image, or anywhere for Tinker) while the
// control worker and its scoring stay elsewhere. It reads samples from, and writes checkpoints to, the same data
// folder as the control worker, and loads each new version into the serving engine at `engine.url`.
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import { OpenAIJudge } from '../activities/judge-client.js';
import type { TrainerBackend } from '../activities/trainer-backend.js';
import { trainerForRun, trainerFromConfig } from '../activities/trainer-backends/trainer-from-config.js';
import { createTrainingActivities } from '../activities/training-activities.js';
import type { OpenClawConfig } from '../core/config.js';
import { policyEngineFromConfig } from '../engines/engine-adapters.js';
import { judgeApiKey } from '../security/engine-token.js';
import type { SampleStore } from '../store/sample-store.js';
import { storeFromConfig } from '../store/store-from-config.js';
import { trainerTaskQueue } from '../temporal/task-queues.js';

export interface TrainerWorkerDependencies {
  store?: SampleStore;
  trainer?: TrainerBackend;
}

export async function createTrainerWorker(
  config: OpenClawConfig,
  connection: NativeConnection,
  deps: TrainerWorkerDependencies = {},
  options: Partial<WorkerOptions> = {},
): Promise<{ worker: Worker; trainer: TrainerBackend; taskQueue: string; store: SampleStore }> {
  const trainer = deps.trainer ?? trainerFromConfig(config);
  const store = deps.store ?? storeFromConfig(config);
  // A run with `trainerTaskQueue` sends every trainer call here: the step, publishing, the publish gate's
  // evaluation (on the trainer's weights) and rollbacks.
  const { trainStep, publishWeights, evaluateCandidate, rollbackTo } = createTrainingActivities({
    store,
    trainer,
    trainerOf: trainerForRun(config, trainer),
    serving: policyEngineFromConfig(config),
    checkpointDir: `${config.dataDir}/checkpoints`,
    judge: new OpenAIJudge({
      baseUrl: config.judge.baseUrl,
      model: config.judge.model,
      apiKey: judgeApiKey(config),
      temperature: config.judge.temperature,
      maxTokens: config.judge.maxTokens,
    }),
    judgeVotes: config.judge.votes,
  });
  const taskQueue = options.taskQueue ?? trainerTaskQueue(config);
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue,
    // One step at a time: a step holds the trainer (GPUs, or the Tinker session) for its whole length.
    maxConcurrentActivityTaskExecutions: 1,
    activities: { trainStep, publishWeights, evaluateCandidate, rollbackTo },
    ...options,
  });
  return { worker, trainer, taskQueue, store };
}
