import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Judge } from '../../activities/judge-client.js';
import { type RolloutStepRecord, rolloutKeys } from '../../activities/rollout-records.js';
import { OMITTED_MIDDLE } from '../../core/context-truncation.js';
import { arithProblem } from '../../environments/arith/problems.js';
import { envRolloutWorkflowId } from '../../temporal/workflow-ids.js';
import type { EnvRolloutInput, EnvRolloutResult } from '../../workflows/agentic-signals.js';
import { saveHistory } from '../support/histories.js';
import {
  bytesOf,
  type ScriptedPolicyServer,
  type ScriptedTurn,
  scriptedLogprob,
  scriptsByTask,
  startScriptedPolicy,
} from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const problem = (k: number) => arithProblem(k);
const calc = (k: number): ScriptedTurn => ({
  content: 'Let me compute.',
  toolCalls: [{ name: 'calculator', arguments: { expression: problem(k).expression } }],
});
const submit = (answer: number): ScriptedTurn => ({ toolCalls: [{ name: 'submit', arguments: { answer } }] });
const malformed: ScriptedTurn = { malformed: '<tool_call>{"name": "calculator", "arguments": {</tool_call>' };

// Scripts keyed by the task's question: known-good and known-bad action sequences.
const scripts: Record<string, ScriptedTurn[]> = {
  [problem(0).question]: [calc(0), submit(problem(0).answer)], // good, through the tools
  [problem(1).question]: [submit(problem(1).answer + 5)], // bad: a wrong number
  [problem(2).question]: [{ content: `The answer is ${problem(2).answer}.` }], // good, as a final message
  [problem(3).question]: [malformed, malformed, malformed, malformed], // parse errors
  [problem(4).question]: Array.from({ length: 10 }, () => calc(4)), // never submits
  [problem(5).question]: [calc(5), calc(5), submit(problem(5).answer)], // cancelled at step 1
  [problem(6).question]: [
    { toolCalls: [{ name: 'calculator', arguments: '{"expression": ' }] }, // bad JSON arguments
    submit(problem(6).answer),
  ],
  [problem(7).question]: [calc(7), submit(problem(7).answer)], // gateway mode
  [problem(8).question]: [calc(8), submit(problem(8).answer)], // step judge
  [problem(9).question]: [calc(9), calc(9), calc(9), submit(problem(9).answer)], // a small context budget
};

/** TEST DOUBLE judge: votes 1 for seeds 0 and 1, -1 for seed 2; keeps what it was asked. */
const judgeCalls: { messages: { role: string; content: string }[]; seed?: number }[] = [];
const alwaysGood: Judge = {
  complete: async (messages, { seed }) => {
    judgeCalls.push({ messages, seed });
    return seed === 2 ? 'Wasted. \\boxed{-1}' : 'Fine. \\boxed{1}';
  },
};

describe('envRolloutWorkflow with the arith environment and a scripted policy', () => {
  let env: TestWorkflowEnvironment;
  let policy: ScriptedPolicyServer;
  let t2: Track2Harness;
  const hostId = `host-${process.pid}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    policy = await startScriptedPolicy(scriptsByTask(scripts), { weightVersion: 3 });
    t2 = await startTrack2(env);
    await t2.startEnvHost({ hostId, judge: alwaysGood, policyApiKey: 'k1' });
  }, 120_000);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
  });

  const input = (rolloutId: string, k: number, extra: Partial<EnvRolloutInput> = {}): EnvRolloutInput => ({
    rolloutId,
    env: 'arith',
    taskId: `arith-${k}`,
    policy: { url: policy.url, sampling: { maxNewTokens: 64 } },
    envTaskQueue: t2.envQueue,
    maxTurns: 6,
    contextBudgetTokens: 100_000,
    ...extra,
  });
  const run = (rolloutId: string, k: number, extra: Partial<EnvRolloutInput> = {}) =>
    env.client.workflow.execute('envRolloutWorkflow', {
      taskQueue: t2.workflowQueue,
      workflowId: envRolloutWorkflowId(rolloutId),
      args: [input(rolloutId, k, extra)],
    }) as Promise<EnvRolloutResult>;
  const id = (name: string) => `${name}-${hostId}`;

  it('a good sequence: calculator, then submit the right number → COMPLETED, reward 1, exact tokens stored', async () => {
    const rolloutId = id('good');
    const result = await run(rolloutId, 0);
    expect(result).toMatchObject({
      rolloutId,
      status: 'COMPLETED',
      reward: 1,
      steps: 2,
      sampleIds: [`${rolloutId}:0`, `${rolloutId}:1`],
      containerIds: [],
      hostIds: [hostId],
      parseErrors: 0,
      stepScores: null,
    });
    const step0 = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, 0));
    const sent = policy.requests.find((r) => r.rid === `${rolloutId}:0`);
    expect(step0?.promptIds).toEqual(sent?.inputIds);
    const reply = `Let me compute.\n<tool_call>{"name": "calculator", "arguments": {"expression":"${problem(0).expression}"}}</tool_call>`;
    expect(step0?.responseIds).toEqual(bytesOf(reply));
    expect(step0?.responseLogProbs).toEqual(step0?.responseIds.map((_, i) => scriptedLogprob(i)));
    expect(step0?.policyVersion).toBe(3);
    expect(step0?.action).toMatchObject({ kind: 'tools', calls: [{ name: 'calculator' }] });
    const observation = await t2.store.get<{ observation: string }>(rolloutKeys.observation(rolloutId, 0, 0));
    expect(observation?.observation).toBe(String(problem(0).answer));
    expect(await t2.store.get(rolloutKeys.released(rolloutId))).toBeDefined();
    if (process.env.RECORD_HISTORIES)
      await saveHistory(env, envRolloutWorkflowId(rolloutId), 'env-rollout-workflow-episode');
  });

  it('a bad sequence: submit a wrong number → COMPLETED, reward 0', async () => {
    const result = await run(id('bad'), 1);
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 0, steps: 1 });
    expect(result.detail).toMatch(/wrong/);
  });

  it('a final answer without tools is evaluated → COMPLETED, reward 1', async () => {
    expect(await run(id('final'), 2)).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 1 });
  });

  it('malformed tool calls → FAILED after maxParseErrors, with error observations, not evaluated', async () => {
    const rolloutId = id('parse');
    const result = await run(rolloutId, 3, { maxParseErrors: 3 });
    expect(result).toMatchObject({ status: 'FAILED', reward: null, steps: 3, parseErrors: 3 });
    expect(result.detail).toMatch(/3 parse errors/);
    const step1 = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, 1));
    expect(step1?.errorMessages[0]?.content).toMatch(/^\[PARSE_ERROR\]/);
    // The policy saw the error observation of step 0 before step 1.
    const second = policy.requests.find((r) => r.rid === `${rolloutId}:1`);
    expect(Buffer.from(second?.inputIds ?? []).toString()).toContain('[PARSE_ERROR]');
    expect(await t2.store.get(rolloutKeys.released(rolloutId))).toBeDefined();
  });

  it('bad JSON arguments are a parse error the policy can recover from', async () => {
    expect(await run(id('badjson'), 6)).toMatchObject({
      status: 'COMPLETED',
      reward: 1,
      steps: 2,
      parseErrors: 1,
    });
  });

  it('maxTurns → TRUNCATED, still evaluated (no answer: -1)', async () => {
    expect(await run(id('turns'), 4, { maxTurns: 4 })).toMatchObject({
      status: 'TRUNCATED',
      reward: -1,
      steps: 4,
    });
  });

  it('cancel → ABORTED, and the sandbox is released', async () => {
    const rolloutId = id('cancel');
    const hold = policy.hold((c) => c.rid === `${rolloutId}:1`);
    const handle = await env.client.workflow.start('envRolloutWorkflow', {
      taskQueue: t2.workflowQueue,
      workflowId: envRolloutWorkflowId(rolloutId),
      args: [input(rolloutId, 5)],
    });
    await hold.reached;
    await handle.cancel();
    hold.release();
    const result = (await handle.result()) as EnvRolloutResult;
    expect(result).toMatchObject({ status: 'ABORTED', reward: null, detail: 'cancelled' });
    expect(await t2.store.get(rolloutKeys.released(rolloutId))).toMatchObject({ hostId });
  });

  it('gateway mode sends messages as side turns and records the returned tokens', async () => {
    const rolloutId = id('gateway');
    const result = await run(rolloutId, 7, { policy: { url: policy.url, mode: 'gateway' } });
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 2 });
    const sent = policy.requests.filter((r) => r.headers['x-session-id'] === rolloutId);
    expect(sent).toHaveLength(2);
    expect(sent[0]?.headers['x-turn-type']).toBe('side');
    expect(sent[0]?.headers.authorization).toBe('Bearer k1');
    expect(sent[0]?.inputIds).toBeNull();
  });

  it('step judge: the task, the earlier steps and the step; the mean of the ±1 votes per step', async () => {
    judgeCalls.length = 0;
    const result = await run(id('judge'), 8, { stepJudge: { votes: 3, coef: 0.5 } });
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, stepScores: [1 / 3, 1 / 3] });
    expect(judgeCalls).toHaveLength(6);
    const second = judgeCalls.map((c) => c.messages[1]?.content ?? '').find((c) => c.includes('### Step 2'));
    expect(second).toContain(problem(8).question);
    // The earlier step (the calculator call and its result) is shown before the judged one (the submit).
    expect(second?.indexOf('calculator')).toBeLessThan(second?.indexOf('submit') ?? -1);
    expect(second).toContain(String(problem(8).answer));
  });

  it('step judge with Track 1’s prompt and the majority of the votes', async () => {
    judgeCalls.length = 0;
    const result = await run(id('judge-turn'), 8, {
      stepJudge: { votes: 3, coef: 0.5, prompt: 'turn', aggregate: 'majority' },
    });
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, stepScores: [1, 1] });
    expect(judgeCalls[0]?.messages[1]?.content).toContain('## What came next [role: tool]');
  });

  it('a prompt over the context budget keeps head 30% + [OMITTED MIDDLE] + tail', async () => {
    const rolloutId = id('budget');
    const budget = 800;
    const maxNewTokens = 64;
    const result = await run(rolloutId, 9, {
      contextBudgetTokens: budget,
      policy: { url: policy.url, sampling: { maxNewTokens } },
    });
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 4 });
    const last = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, 3));
    expect(last?.truncation).toMatchObject({ keptTokens: budget - maxNewTokens });
    expect(last?.truncation?.originalTokens).toBeGreaterThan(budget - maxNewTokens);
    const text = Buffer.from(last?.promptIds ?? []).toString();
    expect(text.startsWith('{"messages":[{"role":"system"')).toBe(true);
    expect(text).toContain(OMITTED_MIDDLE);
    expect(text.indexOf(OMITTED_MIDDLE)).toBe(Math.floor((budget - maxNewTokens) * 0.3));
  });

  it('an unknown environment fails the rollout; a bad input fails the workflow', async () => {
    const result = await run(id('unknown'), 0, { env: 'nope' });
    expect(result).toMatchObject({ status: 'FAILED', reward: null, steps: 0 });
    expect(result.detail).toMatch(/unknown environment kind "nope"/);
    await expect(run(id('invalid'), 0, { maxTurns: 0 })).rejects.toBeInstanceOf(WorkflowFailedError);
  });
});
