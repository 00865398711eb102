// What the Track 2 tests share: a workflow worker on its own queue (the control worker's role), env hosts
// on their own shared queue, a filesystem sample store in a temporary folder.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkerOptions } from '@temporalio/worker';
import type { Judge } from '../../activities/judge-client.js';
import type { EnvironmentRegistry } from '../../environments/environment.js';
import { createEnvironmentRegistry } from '../../environments/registry.js';
import type { SandboxProvider } from '../../environments/sandbox.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { envRolloutWorkflowId } from '../../temporal/workflow-ids.js';
import { createEnvWorkers, type EnvWorkers } from '../../workers/env-worker.js';
import type { EnvRolloutInput, EnvRolloutResult } from '../../workflows/agentic-signals.js';
import { uniqueTaskQueue } from '../support/temporal.js';
import { testWorkflowBundle } from '../support/workflow-bundle.js';

export interface RunningEnvHost {
  workers: EnvWorkers;
  stop(): Promise<void>;
}

export interface Track2Harness {
  dir: string;
  store: FileSampleStore;
  workflowQueue: string;
  envQueue: string;
  startEnvHost(options: {
    hostId: string;
    provider?: SandboxProvider | null;
    registry?: EnvironmentRegistry;
    judge?: Judge;
    policyApiKey?: string;
    hostWorkerOptions?: Partial<WorkerOptions>;
    sharedWorkerOptions?: Partial<WorkerOptions>;
  }): Promise<RunningEnvHost>;
  /** Runs one rollout on the harness's queues (its workflow id `rollout-<rolloutId>`) and returns its result. */
  executeRollout(input: Omit<EnvRolloutInput, 'envTaskQueue'>): Promise<EnvRolloutResult>;
  close(): Promise<void>;
}

export async function startTrack2(
  env: TestWorkflowEnvironment,
  options: {
    /** Activities of the workflow worker's queue (the control worker's role), made with the store. */
    activities?: (store: FileSampleStore, dir: string) => object;
    workflowWorkerOptions?: Partial<WorkerOptions>;
  } = {},
): Promise<Track2Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'track2-'));
  const store = new FileSampleStore(join(dir, 'store'));
  const workflowQueue = uniqueTaskQueue('t2-wf');
  const envQueue = uniqueTaskQueue('t2-env');
  const workflowWorker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue: workflowQueue,
    workflowBundle: testWorkflowBundle(),
    activities: options.activities?.(store, dir) ?? {},
    ...options.workflowWorkerOptions,
  });
  const workflowsRunning = workflowWorker.run();
  const hosts: RunningEnvHost[] = [];

  return {
    dir,
    store,
    workflowQueue,
    envQueue,
    async startEnvHost(host) {
      const workers = await createEnvWorkers({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        hostId: host.hostId,
        provider: host.provider ?? null,
        registry: host.registry ?? createEnvironmentRegistry(),
        store,
        judge: host.judge,
        policyApiKey: host.policyApiKey,
        sharedTaskQueue: envQueue,
        reapIntervalMs: 0,
        hostWorkerOptions: host.hostWorkerOptions,
        sharedWorkerOptions: host.sharedWorkerOptions,
      });
      const running = workers.run();
      const started: RunningEnvHost = {
        workers,
        async stop() {
          workers.shutdown();
          await running.catch(() => undefined);
        },
      };
      hosts.push(started);
      return started;
    },
    executeRollout(input) {
      return env.client.workflow.execute('envRolloutWorkflow', {
        taskQueue: workflowQueue,
        workflowId: envRolloutWorkflowId(input.rolloutId),
        args: [{ ...input, envTaskQueue: envQueue } satisfies EnvRolloutInput],
      }) as Promise<EnvRolloutResult>;
    },
    async close() {
      for (const host of hosts) await host.stop();
      if (workflowWorker.getState() === 'RUNNING') workflowWorker.shutdown();
      await workflowsRunning.catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
