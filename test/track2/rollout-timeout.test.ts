// A rollout that runs past `rolloutTimeoutMs` fails, is run again under a new id, and the step never waits on
// it, in both ways a batch runs its rollouts (a child workflow each, or episode activities in the batch): one
// task, two samples, the scripted policy holds the first attempt of sample 0 forever. The held attempt's
// sandbox is released (its record in the store), its retry answers, and the step completes.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolloutKeys } from '../../activities/rollout-records.js';
import { arithProblem } from '../../environments/arith/problems.js';
import { agenticWorkflowId } from '../../temporal/workflow-ids.js';
import type { AgenticTrainingInput, StepSummary } from '../../workflows/agentic-signals.js';
import { rolloutIdFor } from '../../workflows/rollout-batch-workflow.js';
import { eventually } from '../support/sandbox-fixture.js';
import {
  type Hold,
  type ScriptedPolicyServer,
  startScriptedPolicy,
} from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

describe('a rollout past rolloutTimeoutMs', () => {
  let env: TestWorkflowEnvironment;
  let policy: ScriptedPolicyServer;
  let t2: Track2Harness;
  const holds: Hold[] = [];

  beforeAll(async () => {
    env = await connectTestEnvironment();
    policy = await startScriptedPolicy(() => ({
      toolCalls: [{ name: 'submit', arguments: { answer: arithProblem(0).answer } }],
    }));
    t2 = await startTrack2(env);
    await t2.startEnvHost({ hostId: `timeout-${process.pid}` });
  }, 60_000);

  afterAll(async () => {
    for (const hold of holds) hold.release();
    await t2?.close();
    await policy?.close();
    await env?.teardown();
  });

  it.each(['workflows', 'activities'] as const)(
    'fails and is run again (rollouts as %s)',
    async (rolloutsAs) => {
      const runId = `timeout-${rolloutsAs}-${process.pid}-${Date.now().toString(36)}`;
      const held = rolloutIdFor(`${runId}-s0`, 0, 0, 0);
      const hold = policy.hold((c) => c.rid?.startsWith(`${held}:`) ?? false);
      holds.push(hold);
      const input: AgenticTrainingInput = {
        runId,
        env: 'arith',
        taskIds: ['arith-0'],
        samplesPerTask: 2,
        maxRetriesPerRollout: 1,
        rolloutTimeoutMs: 3_000,
        heartbeatTimeoutMs: 2_000,
        envTaskQueue: t2.envQueue,
        policy: { url: policy.url, sampling: { maxNewTokens: 32 } },
        training: { train: false },
        rolloutsAs,
      };
      const started = Date.now();
      const [summary] = (await env.client.workflow.execute('agenticTrainingWorkflow', {
        taskQueue: t2.workflowQueue,
        workflowId: agenticWorkflowId(runId),
        args: [input],
      })) as StepSummary[];
      const seconds = (Date.now() - started) / 1000;
      console.log(`[rollout-timeout] ${rolloutsAs}: the step ended ${seconds.toFixed(1)} s after its start`);
      expect(summary).toMatchObject({ rollouts: 2, retried: 1, byStatus: { COMPLETED: 2, FAILED: 0 } });
      expect(seconds).toBeLessThan(60);
      // The held attempt was cancelled at its deadline and gave its sandbox back.
      expect(
        await eventually(async () => (await t2.store.get(rolloutKeys.released(held))) !== undefined, 30_000),
      ).toBe(true);
    },
    90_000,
  );
});
