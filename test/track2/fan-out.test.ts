import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agenticStepKey, type StepManifest } from '../../activities/agentic-activities.js';
import { ArithEnvironment } from '../../environments/arith/arith-environment.js';
import { arithProblem } from '../../environments/arith/problems.js';
import { agenticWorkflowId } from '../../temporal/workflow-ids.js';
import {
  type AgenticTrainingInput,
  agenticStatusQuery,
  type StepSummary,
} from '../../workflows/agentic-signals.js';
import { saveHistory } from '../support/histories.js';
import {
  type ScriptContext,
  type ScriptedTurn,
  startScriptedPolicy,
} from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const TASKS = 125;
const N = 4;

/**
 * Per group g (task g) and sample n, from the rollout id `<prefix>-g<g>-n<n>-a<attempt>`:
 * g%10==9: sample 0 always fails (a parse error) → retried once, still FAILED → left out of its group,
 *          which trains on its other three rollouts;
 * g%10==5: sample 1 fails on its first attempt only → the retry succeeds;
 * g%10==3: every sample answers right → a constant group;
 * otherwise even samples answer right (+1), odd ones wrong (0).
 */
function play({ rid, task }: ScriptContext): ScriptedTurn {
  const match = /-g(\d+)-n(\d+)-a(\d+):\d+$/.exec(rid ?? '');
  const [g, n, attempt] = [Number(match?.[1]), Number(match?.[2]), Number(match?.[3])];
  const k = Number(/^#(\d+)/.exec(task)?.[1] ?? -1);
  const answer = k >= 0 ? arithProblem(k).answer : 0;
  const malformed = { malformed: '<tool_call>{"name"</tool_call>' };
  if (g % 10 === 9 && n === 0) return malformed;
  if (g % 10 === 5 && n === 1 && attempt === 0) return malformed;
  const right = g % 10 === 3 || n % 2 === 0;
  return { toolCalls: [{ name: 'submit', arguments: { answer: right ? answer : answer + 1 } }] };
}

/** arith with the task number in front of the question, so the scripted policy knows the answer. */
class NumberedArith extends ArithEnvironment {
  override async loadTask(id: string) {
    const task = await super.loadTask(id);
    return {
      ...task,
      data: { ...task.data, question: `#${id.slice('arith-'.length)} ${task.data.question}` },
    };
  }
}

describe('fan-out: 500 rollouts of the container-free environment through the real server', () => {
  let env: TestWorkflowEnvironment;
  let t2: Track2Harness;
  let policy: Awaited<ReturnType<typeof startScriptedPolicy>>;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    policy = await startScriptedPolicy(play);
    t2 = await startTrack2(env, {
      workflowWorkerOptions: { maxConcurrentWorkflowTaskExecutions: 100, maxCachedWorkflows: 1000 },
    });
    await t2.startEnvHost({
      hostId: `fan-${process.pid}`,
      registry: new Map([['arith', new NumberedArith()]]),
      hostWorkerOptions: { maxConcurrentActivityTaskExecutions: 400 },
      sharedWorkerOptions: { maxConcurrentActivityTaskExecutions: 400 },
    });
  }, 120_000);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
  });

  it('accounts for every rollout: status counts sum to 500, each rollout id once, groups graded', async () => {
    const runId = `fan-${process.pid}-${Date.now().toString(36)}`;
    const input: AgenticTrainingInput = {
      runId,
      env: 'arith',
      taskIds: Array.from({ length: TASKS }, (_, k) => `arith-${k}`),
      samplesPerTask: N,
      rolloutsInFlight: 200,
      rolloutsPerBatch: 100,
      maxRetriesPerRollout: 1,
      maxTurns: 3,
      maxParseErrors: 1,
      envTaskQueue: t2.envQueue,
      policy: { url: policy.url, sampling: { maxNewTokens: 32 } },
      training: { train: false },
    };
    const started = Date.now();
    const handle = await env.client.workflow.start('agenticTrainingWorkflow', {
      taskQueue: t2.workflowQueue,
      workflowId: agenticWorkflowId(runId),
      args: [input],
    });
    let sawProgress = false;
    const watch = setInterval(async () => {
      const status = await handle.query(agenticStatusQuery).catch(() => null);
      if (status && status.rollouts.done > 0 && status.rollouts.total === TASKS * N) sawProgress = true;
    }, 1000);
    const summaries = (await handle.result()) as StepSummary[];
    clearInterval(watch);
    const seconds = (Date.now() - started) / 1000;
    console.log(`fan-out: ${TASKS * N} rollouts in ${seconds.toFixed(1)} s`);

    const [summary] = summaries;
    expect(summary?.rollouts).toBe(500);
    const counts = summary?.byStatus ?? { COMPLETED: 0, TRUNCATED: 0, FAILED: 0, ABORTED: 0 };
    expect(counts.COMPLETED + counts.TRUNCATED + counts.FAILED + counts.ABORTED).toBe(500);
    expect(counts).toEqual({ COMPLETED: 488, TRUNCATED: 0, FAILED: 12, ABORTED: 0 });
    expect(summary).toMatchObject({
      retried: 24,
      groups: 125,
      groupsFailed: 0,
      rolloutsDropped: 12,
      groupsConstant: 13,
      samplesTrained: 0,
    });

    const manifest = await t2.store.get<StepManifest>(agenticStepKey(runId, 0));
    const rollouts = manifest?.groups.flatMap((g) => g.rollouts) ?? [];
    expect(rollouts).toHaveLength(500);
    expect(new Set(rollouts.map((r) => r.rolloutId)).size).toBe(500);
    const slots = new Set(rollouts.map((r) => /-g\d+-n\d+/.exec(r.rolloutId)?.[0]));
    expect(slots.size).toBe(500);
    // 100 whole groups × 4 rollouts + 12 groups without their failed rollout × 3, 1 step each.
    expect(manifest?.sampleIds).toHaveLength(436);
    expect(manifest?.droppedRolloutIds).toHaveLength(12);
    expect(sawProgress).toBe(true);
    // `RECORD_HISTORIES=1`: the run's shape since batches run with a floor under their window (patched).
    if (process.env.RECORD_HISTORIES)
      await saveHistory(env, agenticWorkflowId(runId), 'agentic-training-workflow-batch-window');
  }, 300_000);
});
