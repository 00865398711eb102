// `train start`, `train list` and `sessions` against the real Temporal server, with a workflow worker that
// answers the runs' and sessions' status queries.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromFlags } from '../../cli/cli-config.js';
import {
  formatLineage,
  formatSessions,
  formatTable,
  formatTrainingRuns,
  listSessions,
  listTrainingRuns,
  mergeJson,
  trainingInputFromFlags,
} from '../../cli/operator-commands.js';
import { sessionWorkflowId, trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { startTrainingRun } from '../../temporal/workflow-starts.js';
import type { SessionInput } from '../../workflows/session-signals.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { testWorkflowBundle } from '../support/workflow-bundle.js';

async function eventually<T>(probe: () => Promise<T | null>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error('not within the time limit');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('operator commands', () => {
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  let dir: string;
  const taskQueue = uniqueTaskQueue('operator');
  const suffix = `${process.pid}-${Date.now().toString(36)}`;
  const config = configFromFlags({}, {});

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'operator-'));
    worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: testWorkflowBundle(),
    });
    running = worker.run();
  });

  afterAll(async () => {
    for (const id of [trainingWorkflowId(`op-${suffix}`), sessionWorkflowId(`chat-${suffix}`)])
      await env.client.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => undefined);
    worker?.shutdown();
    await running?.catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it('builds the start input from the defaults, the UI form JSON and the flags, and validates it', async () => {
    const defaults = await trainingInputFromFlags(config, {});
    expect(defaults).toMatchObject({ runId: 'default', method: 'combine', settings: { batchSize: 16 } });

    const file = join(dir, 'run.json');
    await writeFile(file, JSON.stringify({ runId: 'ui', method: 'rl', settings: { batchSize: 4 } }));
    const fromFile = await trainingInputFromFlags(config, { input: file });
    expect(fromFile).toMatchObject({ runId: 'ui', method: 'rl', settings: { batchSize: 4 } });
    expect(fromFile.settings.optimizer.learningRate).toBe(defaults.settings.optimizer.learningRate);

    const flagged = await trainingInputFromFlags(config, {
      input: '{"method": "opd"}',
      run: 'cli',
      batchSize: '8',
    });
    expect(flagged).toMatchObject({ runId: 'cli', method: 'opd', settings: { batchSize: 8 } });

    await expect(trainingInputFromFlags(config, { method: 'ppo' })).rejects.toThrow(/method/);
    await expect(trainingInputFromFlags(config, { batchSize: '0' })).rejects.toThrow(/settings\.batchSize/);
    await expect(trainingInputFromFlags(config, { input: '{"runId": ' })).rejects.toThrow(/not valid JSON/);
    await expect(trainingInputFromFlags(config, { input: '{"surprise": 1}' })).rejects.toThrow(/surprise/);
    expect(mergeJson({ a: { b: 1, c: [1] } }, { a: { c: [2] } })).toEqual({ a: { b: 1, c: [2] } });
  });

  it('starts a run once, lists it with its state, and lists sessions', async () => {
    const input = await trainingInputFromFlags(config, { run: `op-${suffix}`, method: 'rl', batchSize: '4' });
    expect(await startTrainingRun(env.client, taskQueue, input)).toEqual({
      workflowId: trainingWorkflowId(`op-${suffix}`),
      started: true,
    });
    expect((await startTrainingRun(env.client, taskQueue, input)).started).toBe(false);

    const runs = await eventually(async () => {
      const rows = await listTrainingRuns(env.client, 500);
      const row = rows.find((r) => r.workflowId === trainingWorkflowId(`op-${suffix}`));
      return row?.state ? rows : null;
    });
    const run = runs.find((r) => r.workflowId === trainingWorkflowId(`op-${suffix}`));
    expect(run).toMatchObject({ status: 'RUNNING', state: { policyVersion: 0, method: 'rl' } });
    expect(formatTrainingRuns(runs)).toMatch(new RegExp(`op-${suffix}\\s+RUNNING\\s+rl\\s+0\\s+0\\s+0/4`));

    const session: SessionInput = {
      sessionId: `alice/chat-${suffix}`,
      runId: `op-${suffix}`,
      method: 'rl',
      judgeVotes: 1,
      idleTimeoutMs: 600_000,
      continueAsNewAfterTurns: 100,
    };
    await env.client.workflow.start('sessionWorkflow', {
      workflowId: sessionWorkflowId(session.sessionId),
      taskQueue,
      args: [session],
    });
    const sessions = await eventually(async () => {
      const rows = await listSessions(env.client, 500);
      const row = rows.find((r) => r.workflowId === sessionWorkflowId(session.sessionId));
      return row?.state ? rows : null;
    });
    expect(formatSessions(sessions)).toMatch(new RegExp(`alice\\s+chat-${suffix}\\s+RUNNING\\s+0\\s+0\\s+0`));
    // One tenant's sessions: a visibility query on the workflow id's prefix.
    const ofAlice = await eventually(async () => {
      const rows = await listSessions(env.client, 500, 'alice');
      return rows.some((r) => r.workflowId === sessionWorkflowId(session.sessionId)) ? rows : null;
    });
    expect(
      ofAlice.every((row) => row.workflowId.startsWith('session-alice/') && row.tenant === 'alice'),
    ).toBe(true);
    const ofBob = await listSessions(env.client, 500, 'bob');
    expect(ofBob.some((r) => r.workflowId === sessionWorkflowId(session.sessionId))).toBe(false);
    await expect(listSessions(env.client, 5, "x' OR 'a")).rejects.toThrow(/--tenant: a tenant name/);
  });

  it('prints tables with aligned columns', () => {
    expect(formatTable(['A', 'LONGER'], [['xyz', '1']])).toBe('A    LONGER\nxyz  1');
    expect(formatTrainingRuns([])).toBe('no training runs');
    expect(formatSessions([])).toBe('no sessions');
    expect(
      formatLineage([
        {
          version: 1,
          stepId: 'r:i:v1',
          sampleIds: ['alice/c:1', 'bob/d:1', 'alice/c:2'],
          checkpoint: '/c/v1',
          metrics: {},
        },
        // Written before lineage counted tenants: counted from the ids.
        { version: 2, stepId: 'r:i:v2', sampleIds: ['old:1'], checkpoint: '/c/v2', metrics: {} },
      ]),
    ).toBe(
      [
        'VERSION  STEP    SAMPLES  TENANTS         CHECKPOINT',
        'v2       r:i:v2  1        - 1             /c/v2',
        'v1       r:i:v1  3        alice 2, bob 1  /c/v1',
      ].join('\n'),
    );
  });
});
