// The Temporal server as production runs it (go.temporal.io/server on PostgreSQL, scripts/temporal-server.sh):
// a training step of 200 container-free rollouts, and the server killed with SIGKILL while they run and
// started again on the same database. Every rollout is accounted for once, each group graded. Builds the
// server from the Go module proxy the first time (minutes; cached in build/temporal-server/).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agenticStepKey, type StepManifest } from '../../activities/agentic-activities.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { agenticWorkflowId } from '../../temporal/workflow-ids.js';
import { createEnvWorkers, type EnvWorkers } from '../../workers/env-worker.js';
import {
  type AgenticTrainingInput,
  agenticStatusQuery,
  type StepSummary,
} from '../../workflows/agentic-signals.js';
import { answerRight, NumberedArith } from '../support/numbered-arith.js';
import { startScriptedPolicy } from '../support/scripted-policy-server.js';
import { connectTestClient, connectTestWorkerConnection } from '../support/temporal.js';
import { startTemporalCluster, type TemporalCluster } from '../support/temporal-cluster.js';
import { testWorkflowBundle } from '../support/workflow-bundle.js';

const TASKS = 50;
const N = 4;

describe('fan-out on the Temporal server with PostgreSQL, the server killed mid-step', () => {
  let dir: string;
  let cluster: TemporalCluster | undefined;
  let policy: Awaited<ReturnType<typeof startScriptedPolicy>>;
  let connection: NativeConnection;
  let workflowWorker: Worker;
  let env: EnvWorkers;
  let running: Promise<unknown>[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fan-out-server-'));
    cluster = await startTemporalCluster(join(dir, 'temporal'));
    policy = await startScriptedPolicy(answerRight);
    connection = await connectTestWorkerConnection(cluster.address);
    const store = new FileSampleStore(join(dir, 'store'));
    workflowWorker = await Worker.create({
      connection,
      taskQueue: 'server-wf',
      workflowBundle: testWorkflowBundle(),
      maxCachedWorkflows: 500,
    });
    env = await createEnvWorkers({
      connection,
      hostId: `server-${process.pid}`,
      provider: null,
      registry: new Map([['arith', new NumberedArith()]]),
      store,
      sharedTaskQueue: 'server-env',
      reapIntervalMs: 0,
    });
    running = [workflowWorker.run(), env.run()];
  }, 30 * 60_000);

  afterAll(async () => {
    env?.shutdown();
    if (workflowWorker?.getState() === 'RUNNING') workflowWorker.shutdown();
    await Promise.allSettled(running);
    await connection?.close();
    await policy?.close();
    await cluster?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it(
    'accounts for every rollout once across a kill -9 of the server',
    async () => {
      if (!cluster) throw new Error('no server');
      const { client } = await connectTestClient(cluster.address);
      const runId = `server-${process.pid}-${Date.now().toString(36)}`;
      const input: AgenticTrainingInput = {
        runId,
        env: 'arith',
        taskIds: Array.from({ length: TASKS }, (_, k) => `arith-${k}`),
        samplesPerTask: N,
        rolloutsInFlight: 40,
        rolloutsPerBatch: 100,
        maxRetriesPerRollout: 1,
        maxTurns: 3,
        envTaskQueue: 'server-env',
        heartbeatTimeoutMs: 5_000,
        policy: { url: policy.url, sampling: { maxNewTokens: 32 } },
        training: { train: false },
      };
      const handle = await client.workflow.start('agenticTrainingWorkflow', {
        taskQueue: 'server-wf',
        workflowId: agenticWorkflowId(runId),
        args: [input],
      });
      // Killed once a good part of the step is done, and started again on the same PostgreSQL.
      for (;;) {
        const status = await handle.query(agenticStatusQuery).catch(() => null);
        if ((status?.rollouts.done ?? 0) >= 40) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await cluster.kill9();
      await cluster.restart();
      const [summary] = (await handle.result()) as StepSummary[];
      await client.connection.close();

      expect(summary?.rollouts).toBe(TASKS * N);
      expect(summary?.byStatus.COMPLETED).toBe(TASKS * N);
      const store = new FileSampleStore(join(dir, 'store'));
      const manifest = await store.get<StepManifest>(agenticStepKey(runId, 0));
      const rollouts = manifest?.groups.flatMap((g) => g.rollouts) ?? [];
      expect(new Set(rollouts.map((r) => /-g\d+-n\d+/.exec(r.rolloutId)?.[0])).size).toBe(TASKS * N);
      expect(manifest?.groups).toHaveLength(TASKS);
      // Every answer is right: constant groups, the first one kept.
      expect(summary?.groupsConstant).toBe(TASKS - 1);
    },
    10 * 60_000,
  );
});
