// An env host: two workers in one process. One polls the shared `env` queue, where sandboxes are acquired
// (and the training step's bookkeeping runs); the other polls this host's own queue `env-<hostId>`, where
// every later step of the rollouts it holds arrives. A reaper removes containers whose lease expired.
// `runEnvHost` is the whole host of `openclaw-rl worker env`: sandbox provider, environments, store, judge,
// the two workers, until asked to stop.
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import { createAgenticActivities } from '../activities/agentic-activities.js';
import { createEnvActivities, type EnvHostDependencies } from '../activities/env-activities.js';
import { OpenAIJudge } from '../activities/judge-client.js';
import type { OpenClawConfig } from '../core/config.js';
import { createEnvironmentRegistry } from '../environments/registry.js';
import type { SandboxProvider } from '../environments/sandbox.js';
import { type SandboxReaper, startSandboxReaper } from '../environments/sandbox-reaper.js';
import { parseWarmPoolSizes, type WarmPoolSettingsInput } from '../environments/warm-pool.js';
import { engineAuthHeaders, judgeApiKey } from '../security/engine-token.js';
import { storeFromConfig } from '../store/store-from-config.js';
import { connectWorker } from '../temporal/connection.js';
import { ENV_TASK_QUEUE } from '../temporal/task-queues.js';
import { countedSandboxProvider } from './counted-sandbox-provider.js';
import { startWorkerTelemetry } from './worker-telemetry.js';

/** The host's own settings (id, provider, environments, store, judge, queue) are its activities'. */
export interface EnvWorkersOptions extends EnvHostDependencies {
  connection: NativeConnection;
  namespace?: string;
  /**
   * How often expired leases are reaped (default 60 s; 0 turns the reaper off). The first sweep runs at
   * start, so a host restarted after a crash removes at once what expired while it was down.
   */
  reapIntervalMs?: number;
  /** Extra options for the shared-queue worker (e.g. concurrency). */
  sharedWorkerOptions?: Partial<WorkerOptions>;
  /** Extra options for the host-queue worker. */
  hostWorkerOptions?: Partial<WorkerOptions>;
}

export interface EnvWorkers {
  hostId: string;
  sharedTaskQueue: string;
  hostTaskQueue: string;
  shared: Worker;
  host: Worker;
  /** Runs both workers (and the reaper) until `shutdown`; rejects if either worker fails. */
  run(): Promise<void>;
  shutdown(): void;
}

/**
 * Activity polls an env worker keeps open (at most one per slot). A poll takes one task at a time and a
 * container-free episode frees its slot quickly, so with the SDK's default of 10 tasks waited in the queue while
 * most slots were free: 5.7 s (median) at 10,000 rollouts on a loaded machine, against about 20 slots in use.
 */
export const ENV_ACTIVITY_POLLS = 50;

function withActivityPolls(options: Partial<WorkerOptions> | undefined): Partial<WorkerOptions> {
  if (options?.maxConcurrentActivityTaskPolls !== undefined || options?.activityTaskPollerBehavior)
    return options;
  const slots = options?.maxConcurrentActivityTaskExecutions;
  return {
    ...options,
    maxConcurrentActivityTaskPolls: Math.min(ENV_ACTIVITY_POLLS, slots ?? ENV_ACTIVITY_POLLS),
  };
}

/** Host ids become queue names: letters, digits, `.`, `_`, `-`. */
export function validHostId(hostId: string): string {
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(hostId))
    throw new Error(`host id must be 1-100 letters, digits, ".", "_" or "-", got "${hostId}"`);
  return hostId;
}

export async function createEnvWorkers(options: EnvWorkersOptions): Promise<EnvWorkers> {
  const hostId = validHostId(options.hostId);
  const sharedTaskQueue = options.sharedTaskQueue ?? ENV_TASK_QUEUE;
  const { connection, namespace, reapIntervalMs, sharedWorkerOptions, hostWorkerOptions, ...dependencies } =
    options;
  const activities = createEnvActivities({ ...dependencies, hostId, sharedTaskQueue });
  const agentic = createAgenticActivities({ store: options.store, registry: options.registry });
  const common = { connection, namespace: namespace ?? 'default' };
  const shared = await Worker.create({
    ...common,
    taskQueue: sharedTaskQueue,
    activities: { ...activities.shared, ...agentic },
    ...withActivityPolls(sharedWorkerOptions),
  });
  const host = await Worker.create({
    ...common,
    taskQueue: activities.hostQueue,
    activities: activities.host,
    ...withActivityPolls(hostWorkerOptions),
  });

  let reaper: SandboxReaper | undefined;
  const reapEvery = reapIntervalMs ?? 60_000;
  return {
    hostId,
    sharedTaskQueue,
    hostTaskQueue: activities.hostQueue,
    shared,
    host,
    async run() {
      const provider = options.provider;
      if (provider && reapEvery > 0) {
        // One sweep at a time; a failed sweep is retried at the next interval.
        reaper = startSandboxReaper(provider, { intervalMs: reapEvery });
      }
      try {
        await Promise.all([shared.run(), host.run()]);
      } finally {
        await reaper?.stop();
      }
    },
    shutdown() {
      void reaper?.stop();
      for (const worker of [shared, host]) {
        if (worker.getState() === 'RUNNING') worker.shutdown();
      }
    },
  };
}

/** Makes the host's sandbox provider (the Docker one); null serves container-free kinds only. */
export type SandboxProviderFactory = (settings: {
  warmPool?: WarmPoolSettingsInput;
}) => Promise<SandboxProvider | null>;

/** What an env host runs with, beyond the config: its id, queue, judge, limits and the kinds' options. */
export interface EnvHostSettings {
  hostId: string;
  /** The shared env queue. */
  sharedTaskQueue: string;
  /** Started containers kept ready per image (`image=N,...`); none without. */
  warmPool?: string;
  /** The environment kinds' options, keyed by kind. */
  envOptions: Record<string, unknown>;
  judgeUrl?: string;
  judgeModel?: string;
  judgeApiKey?: string;
  policyApiKey?: string;
  /** Concurrent activities per worker. */
  maxActivities: number;
  reapIntervalMs?: number;
}

/**
 * The step judge at `judgeUrl`: the given key, else the config's judge key, else the engine token when the
 * URL is one of the project's own engines (a guarded frozen judge engine).
 */
export function stepJudge(
  config: OpenClawConfig,
  judgeUrl: string,
  overrides: { judgeModel?: string; judgeApiKey?: string } = {},
): OpenAIJudge {
  return new OpenAIJudge({
    baseUrl: judgeUrl,
    model: overrides.judgeModel ?? config.judge.model,
    apiKey: overrides.judgeApiKey ?? judgeApiKey(config, judgeUrl),
    temperature: config.judge.temperature,
    maxTokens: config.judge.maxTokens,
  });
}

/**
 * Runs an env host until `untilStopped()` (asked once the host is up) resolves: the shared-queue worker, the
 * host-queue worker, the lease reaper.
 */
export async function runEnvHost(
  config: OpenClawConfig,
  settings: EnvHostSettings,
  options: { sandboxProvider?: SandboxProviderFactory; untilStopped: () => Promise<void> },
): Promise<void> {
  const { hostId } = settings;
  const warmPool = settings.warmPool
    ? {
        name: hostId.replace(/^[^A-Za-z0-9]+/, '').slice(0, 61) || 'pool',
        sizes: parseWarmPoolSizes(settings.warmPool),
      }
    : undefined;
  const made = options.sandboxProvider ? await options.sandboxProvider({ warmPool }) : null;
  const provider = made && countedSandboxProvider(made);
  const telemetry = await startWorkerTelemetry(config, 'env', {
    ...(provider && { runningContainers: () => provider.running() }),
  });
  const connection = await connectWorker(config);
  const store = storeFromConfig(config);
  const workers = await createEnvWorkers({
    connection,
    namespace: config.temporal.namespace,
    hostId,
    provider,
    registry: createEnvironmentRegistry(settings.envOptions),
    store,
    sharedTaskQueue: settings.sharedTaskQueue,
    policyApiKey: settings.policyApiKey,
    engineHeaders: engineAuthHeaders(config),
    ...(settings.judgeUrl && { judge: stepJudge(config, settings.judgeUrl, settings) }),
    ...(settings.reapIntervalMs !== undefined && { reapIntervalMs: settings.reapIntervalMs }),
    sharedWorkerOptions: {
      maxConcurrentActivityTaskExecutions: settings.maxActivities,
      ...telemetry.workerOptions,
    },
    hostWorkerOptions: {
      maxConcurrentActivityTaskExecutions: settings.maxActivities,
      ...telemetry.workerOptions,
    },
  });
  telemetry.watchTaskQueues(connection.workflowService, config.temporal.namespace, [
    workers.sharedTaskQueue,
    workers.hostTaskQueue,
  ]);
  console.log(
    `env host ${hostId} on ${workers.sharedTaskQueue} and ${workers.hostTaskQueue} at ${config.temporal.address}` +
      ` (${provider ? 'containers' : 'container-free kinds only'})`,
  );
  const running = workers.run();
  await Promise.race([options.untilStopped(), running]);
  workers.shutdown();
  await running.catch(() => undefined);
  await provider?.close?.();
  await connection.close();
  await store.close?.();
  await telemetry.close();
}
