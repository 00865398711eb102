// A real Track 2 run beside a dashboard fixture's Track 1 run: an env host (arith, container-free) on the
// fixture's sample store, the fixture's control worker running agenticTrainingWorkflow, the fixture's reference
// engine (its tiny random model) as the policy. Nothing is trained (`train: false`: the engine's weights stay
// the Track 1 run's); the run is paused after its first steps, so it stays running (listed) with steps in the
// store for the dashboard to read.

import { createEnvironmentRegistry } from '../../environments/registry.js';
import { engineAuthHeaders } from '../../security/engine-token.js';
import { agenticWorkflowId } from '../../temporal/workflow-ids.js';
import { createEnvWorkers } from '../../workers/env-worker.js';
import {
  type AgenticStatus,
  type AgenticTrainingInput,
  agenticStatusQuery,
  pauseAgenticUpdate,
} from '../../workflows/agentic-signals.js';
import type { DashboardFixture } from './dashboard-fixture.js';
import { uniqueTaskQueue } from './temporal.js';
import { waitFor } from './wait-for.js';

export const DASHBOARD_AGENTIC_TASKS = ['arith-0', 'arith-1', 'arith-2'];

export interface DashboardAgenticRun {
  runId: string;
  /** The run's status once it is paused, with at least one step done. */
  status: AgenticStatus;
  close(): Promise<void>;
}

export async function startDashboardAgenticRun(fixture: DashboardFixture): Promise<DashboardAgenticRun> {
  const { env, config, stack } = fixture;
  const envQueue = uniqueTaskQueue('dash-env');
  const workers = await createEnvWorkers({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    hostId: `dash-${process.pid}`,
    provider: null,
    registry: createEnvironmentRegistry(),
    store: stack.store,
    sharedTaskQueue: envQueue,
    engineHeaders: engineAuthHeaders(config),
    reapIntervalMs: 0,
  });
  const running = workers.run();
  const runId = `dash-agentic-${config.runId}`.slice(0, 64);
  const input: AgenticTrainingInput = {
    runId,
    env: 'arith',
    taskIds: DASHBOARD_AGENTIC_TASKS,
    samplesPerTask: 4,
    rolloutsInFlight: 12,
    steps: 5,
    maxTurns: 1,
    contextBudgetTokens: 3000,
    envTaskQueue: envQueue,
    policy: { url: config.engine.url, sampling: { maxNewTokens: 32, temperature: 1, seed: 11 } },
    training: { taskQueue: config.temporal.taskQueue, train: false },
  };
  const handle = await env.client.workflow.start('agenticTrainingWorkflow', {
    taskQueue: config.temporal.taskQueue,
    workflowId: agenticWorkflowId(runId),
    args: [input],
  });
  const close = async () => {
    await handle.terminate('test over').catch(() => undefined);
    workers.shutdown();
    await running.catch(() => undefined);
  };
  try {
    // Paused once a step is done: the step in progress finishes, the next one waits.
    const statusOf = () =>
      env.client.workflow
        .getHandle(agenticWorkflowId(runId))
        .query(agenticStatusQuery)
        .catch(() => null);
    await waitFor(
      async () => ((await statusOf())?.stepsCompleted ?? 0) >= 1,
      120_000,
      'a first agentic step',
    );
    await env.client.workflow.getHandle(agenticWorkflowId(runId)).executeUpdate(pauseAgenticUpdate);
    let status: AgenticStatus | null = null;
    await waitFor(
      async () => {
        status = await statusOf();
        return status?.phase === 'paused';
      },
      120_000,
      'the agentic run paused',
    );
    return { runId, status: status as unknown as AgenticStatus, close };
  } catch (error) {
    await close();
    throw error;
  }
}
