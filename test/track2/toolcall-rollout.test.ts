// The toolcall kind through Temporal: envRolloutWorkflow on a workflow worker, an env host with the Docker
// sandbox provider (real containers of openclaw/sandbox-python), and the scripted policy (a test double of
// the engine). Known-good and known-bad action sequences get exactly the rewards of spec 10.4 as
// environments/toolcall/toolcall-reward.ts computes them, the stored transcript holds what the interpreter
// really printed, and no container is left afterwards.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvActivities } from '../../activities/env-activities.js';
import {
  type ObservationRecord,
  type RolloutStepRecord,
  rolloutKeys,
} from '../../activities/rollout-records.js';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import type { Environment } from '../../environments/environment.js';
import { parseToolcallConfig } from '../../environments/toolcall/toolcall-config.js';
import { ToolcallEnvironment } from '../../environments/toolcall/toolcall-environment.js';
import { toolcallReward } from '../../environments/toolcall/toolcall-reward.js';
import type { EnvRolloutResult } from '../../workflows/agentic-signals.js';
import { docker, ensureImage, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';
import {
  type ScriptedPolicyServer,
  type ScriptedTurn,
  startScriptedPolicy,
} from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const TASK = 'telescoping-sum'; // label \frac{99}{100}
const SUM_CODE =
  'from fractions import Fraction\nprint(sum(Fraction(1, k * (k + 1)) for k in range(1, 100)))';
const runCode = (code: string): ScriptedTurn => ({
  content: 'Let me compute it.',
  toolCalls: [{ name: 'code_interpreter', arguments: { code } }],
});
const answer = (content: string): ScriptedTurn => ({ content });

/** The action sequences, by a label that is part of the rollout id. */
const scripts: Record<string, ScriptedTurn[]> = {
  good: [runCode(SUM_CODE), answer('The program printed 99/100.\n\nAnswer: \\boxed{\\frac{99}{100}}')],
  wrong: [runCode(SUM_CODE), answer('Answer: \\boxed{\\frac{100}{101}}')],
  unboxed: [answer('I think it is 99/100.')],
  busywrong: [runCode('print(1)'), runCode('print(2)'), runCode('print(3)'), answer('\\boxed{1}')],
};

const CONFIG = parseToolcallConfig({
  limits: { memoryBytes: 256 * 1024 * 1024, cpus: 1, pids: 64 },
  pythonTimeoutMs: 10_000,
});
const reward = (correct: boolean, toolCalls: number) => toolcallReward(correct, toolCalls, CONFIG.reward);

describe('toolcall rollouts through Temporal in real containers', () => {
  let env: TestWorkflowEnvironment;
  let policy: ScriptedPolicyServer;
  let t2: Track2Harness;
  const ids = rolloutIds('toolcall-rollout');
  const hostId = `toolcall-${process.pid}-${Date.now().toString(36)}`;
  const registry = new Map<string, Environment>([['toolcall', new ToolcallEnvironment({ config: CONFIG })]]);
  const started: string[] = [];

  beforeAll(async () => {
    const began = Date.now();
    await ensureImage(CONFIG.image);
    env = await connectTestEnvironment();
    policy = await startScriptedPolicy(({ rid, step }) => {
      const label = Object.keys(scripts).find((name) => rid?.includes(`-${name}`));
      return label === undefined ? undefined : scripts[label]?.[step];
    });
    t2 = await startTrack2(env);
    await t2.startEnvHost({ hostId, registry, provider: new DockerSandboxProvider() });
    console.log(`[toolcall-rollout] setup ${((Date.now() - began) / 1000).toFixed(1)} s`);
  }, IMAGE_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
    const left = await ids.leftovers();
    await ids.removeAll();
    expect(left).toEqual([]);
  });

  const run = async (label: string): Promise<{ rolloutId: string; result: EnvRolloutResult }> => {
    const rolloutId = ids.next(label);
    started.push(rolloutId);
    const result = await t2.executeRollout({
      rolloutId,
      env: 'toolcall',
      taskId: TASK,
      policy: { url: policy.url },
      maxTurns: 6,
    });
    return { rolloutId, result };
  };

  /** Containers (any state) labelled with this rollout id: what `docker ps -a --filter label=...` lists. */
  const containersOf = async (rolloutId: string) =>
    docker.listContainers({ all: true, filters: { label: [`openclaw.rollout-id=${rolloutId}`] } });

  it('code_interpreter, then the right \\boxed{} answer → reward +1; the transcript holds the real output', async () => {
    const { rolloutId, result } = await run('good');
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 2, hostIds: [hostId] });
    expect(result.reward).toBe(reward(true, 1));
    expect(result.containerIds).toHaveLength(1);
    expect(result.detail).toMatch(/answer .* is correct.*1 tool calls, 0 invalid/);

    // What the interpreter printed in the container, as stored and as the policy saw it next turn.
    const observation = await t2.store.get<ObservationRecord>(rolloutKeys.observation(rolloutId, 0, 0));
    expect(observation).toMatchObject({ name: 'code_interpreter', observation: '99/100', done: false });
    const step0 = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, 0));
    expect(step0?.action).toMatchObject({ kind: 'tools', calls: [{ name: 'code_interpreter' }] });
    const second = policy.requests.find((r) => r.rid === `${rolloutId}:1`);
    const prompt = Buffer.from(second?.inputIds ?? []).toString('utf8');
    expect(prompt).toContain('"role":"tool"');
    expect(prompt).toContain('"content":"99/100"');
    expect(await t2.store.get(rolloutKeys.released(rolloutId))).toBeDefined();
    expect(await containersOf(rolloutId)).toEqual([]);
  });

  it('a wrong \\boxed{} answer after one call → min(-0.6, -1 + (1 - 2) / 2 · 0.1) = -1.05', async () => {
    const { rolloutId, result } = await run('wrong');
    expect(result).toMatchObject({ status: 'COMPLETED', reward: -1.05, steps: 2 });
    expect(result.reward).toBe(reward(false, 1));
    expect(result.detail).toMatch(/answer .* is wrong.*1 tool calls/);
    expect(await containersOf(rolloutId)).toEqual([]);
  });

  it('no \\boxed{} answer and no call → -1.1; a wrong one after three calls → -0.95', async () => {
    const [unboxed, busy] = await Promise.all([run('unboxed'), run('busywrong')]);
    expect(unboxed.result).toMatchObject({ status: 'COMPLETED', reward: -1.1, steps: 1 });
    expect(unboxed.result.reward).toBe(reward(false, 0));
    expect(unboxed.result.detail).toMatch(/no \\boxed\{\} answer.*0 tool calls/);
    expect(busy.result).toMatchObject({ status: 'COMPLETED', reward: -0.95, steps: 4 });
    expect(busy.result.reward).toBe(reward(false, 3));
    const outputs = await Promise.all(
      [0, 1, 2].map((k) =>
        t2.store
          .get<ObservationRecord>(rolloutKeys.observation(busy.rolloutId, k, 0))
          .then((o) => o?.observation),
      ),
    );
    expect(outputs).toEqual(['1', '2', '3']);
    for (const { rolloutId } of [unboxed, busy]) expect(await containersOf(rolloutId)).toEqual([]);
  });

  it('a step that runs after its rollout was released does not create the container again', async () => {
    // A cancelled rollout releases its sandbox without waiting for the step in flight; that step, on a host
    // that no longer holds the container, must fail instead of re-creating (and leaking) it.
    const rolloutId = ids.next('late');
    const activities = createEnvActivities({
      hostId,
      provider: new DockerSandboxProvider(),
      registry,
      store: t2.store,
    });
    const ref = { rolloutId, env: 'toolcall', taskId: TASK, leaseMs: 60_000 };
    await activities.shared.acquireSandbox(ref);
    await activities.host.resetEpisode(ref);
    const call = { id: 'call_0_0', name: 'code_interpreter', arguments: { code: 'print(1)' } };
    await t2.store.put(rolloutKeys.step(rolloutId, 0), {
      rolloutId,
      step: 0,
      sampleId: `${rolloutId}:0`,
      message: { role: 'assistant', content: '' },
      action: { kind: 'tools', calls: [call] },
      errorMessages: [],
    });
    expect(await containersOf(rolloutId)).toHaveLength(1);
    await activities.host.releaseSandbox(ref);
    await expect(activities.host.envStep({ ...ref, step: 0 })).rejects.toThrow(/was released/);
    expect(await containersOf(rolloutId)).toEqual([]);
  });

  it('leaves no container of any of its rollouts behind', async () => {
    expect(started).toHaveLength(4);
    expect(await ids.leftovers()).toEqual([]);
  });
});
