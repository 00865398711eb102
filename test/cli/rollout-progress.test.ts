// The bars of the commands that wait on rollouts, against the real server and an env host: `rollout` (turns
// done, read from the rollout's history and its loop's heartbeat) and `eval --env` (rollouts done, with the
// running mean score). The
// policy is the scripted test double: two turns for arith-2 (a calculator call, then the right answer), one
// for arith-0 (right) and arith-1 (wrong).
import { Connection } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { runEval } from '../../cli/eval-command.js';
import { rolloutInputFromFlags, runRolloutWithProgress } from '../../cli/rollout-command.js';
import { arithProblem } from '../../environments/arith/problems.js';
import { isEncrypted } from '../../security/payload-codec.js';
import { envRolloutWorkflowId } from '../../temporal/workflow-ids.js';
import { scriptsByTask, startScriptedPolicy } from '../support/scripted-policy-server.js';
import { connectTestEnvironment, testEncryptionPlugin, testPayloadKeysEnv } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from '../track2/track2-harness.js';
import { lastFrame, recordingStreamDouble } from './terminal-stream-double.js';

const submit = (answer: number) => ({ toolCalls: [{ name: 'submit', arguments: { answer } }] });

describe('rollout and eval --env progress', () => {
  let env: TestWorkflowEnvironment;
  let t2: Track2Harness;
  let policy: Awaited<ReturnType<typeof startScriptedPolicy>>;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    policy = await startScriptedPolicy(
      scriptsByTask({
        [arithProblem(0).question]: [submit(arithProblem(0).answer)],
        [arithProblem(1).question]: [submit(arithProblem(1).answer + 5)],
        [arithProblem(2).question]: [
          { toolCalls: [{ name: 'calculator', arguments: { expression: '1 + 1' } }] },
          submit(arithProblem(2).answer),
        ],
      }),
    );
    t2 = await startTrack2(env);
    await t2.startEnvHost({ hostId: `progress-host-${process.pid}` });
  }, 60_000);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
  });

  it("rollout: a bar of the turns done, from the rollout history and the episode loop's heartbeat", async () => {
    const stderr = recordingStreamDouble(true);
    const input = {
      ...rolloutInputFromFlags({
        env: 'arith',
        task: 'arith-2',
        policyUrl: policy.url,
        envQueue: t2.envQueue,
        maxTurns: '4',
        rolloutId: `progress-${process.pid}-${Date.now().toString(36)}`,
      }),
      // The SDK sends heartbeats at most every 0.8 × this: the bar follows the loop that closely.
      heartbeatTimeoutMs: 2_000,
    };
    // The second turn is held until the bar shows the first one done: the loop runs inside startEpisode
    // (arith needs no container), so only its heartbeat can say so.
    const held = policy.hold(({ task, step }) => task.includes(arithProblem(2).question) && step === 1);
    const running = runRolloutWithProgress(env.client, t2.workflowQueue, input, {
      stream: stderr.stream,
      intervalMs: 50,
    });
    try {
      await held.reached;
      await vi.waitFor(() => expect(stderr.text()).toMatch(/\| 1\/4 turns \| policyStep/), {
        timeout: 30_000,
        interval: 100,
      });
      // That heartbeat is a private payload too: Temporal holds it encrypted (read with no codec here).
      const raw = await Connection.connect({ address: inject('temporalAddress') });
      try {
        const described = await raw.workflowService.describeWorkflowExecution({
          namespace: inject('temporalNamespace'),
          execution: { workflowId: envRolloutWorkflowId(input.rolloutId) },
        });
        const details = (described.pendingActivities ?? []).flatMap(
          (pending) => pending.heartbeatDetails?.payloads ?? [],
        );
        expect(details.length).toBeGreaterThan(0);
        for (const payload of details) expect(isEncrypted(payload)).toBe(testEncryptionPlugin() !== null);
      } finally {
        await raw.close();
      }
    } finally {
      held.release();
    }
    const result = await running;
    expect(result).toMatchObject({ status: 'COMPLETED', steps: 2 });
    expect(lastFrame(stderr.text())).toMatch(
      new RegExp(`^rollout-${input.rolloutId} \\|[█░]+\\| 2/4 turns \\| COMPLETED$`),
    );
  });

  it('eval --env: a bar of the rollouts done with the running mean score', async () => {
    const stderr = recordingStreamDouble(true);
    const report = await runEval(
      {
        engineUrl: policy.url,
        env: 'arith',
        tasks: 'arith-0,arith-1',
        temporalAddress: inject('temporalAddress'),
        taskQueue: t2.workflowQueue,
        envQueue: t2.envQueue,
        maxTurns: '3',
      },
      { TEMPORAL_NAMESPACE: inject('temporalNamespace'), ...testPayloadKeysEnv() },
      stderr.stream,
    );
    expect(report.meanScore).toBe(0.5);
    expect(stderr.text()).toContain('0/2 rollouts done | mean score -');
    expect(lastFrame(stderr.text())).toMatch(/^tasks \|[█░]+\| 2\/2 rollouts done \| mean score 0\.500$/);
  });
});
