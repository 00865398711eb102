// A user with only a hosted model (a plain OpenAI-compatible endpoint: /v1/models and /v1/chat/completions,
// no /v1/tokenize, no token ids) points `rollout --policy-url` at it. Before, the episode failed inside with
// "POST /v1/tokenize: HTTP 404: not here"; now the policy is probed once at start, the rollout runs text-only
// through the real Temporal server and env host, is scored, and says `evaluate-only` and why; asking to train
// with that URL is refused at start, naming the engine kinds that can train.

import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RolloutStepRecord, rolloutKeys } from '../../activities/rollout-records.js';
import { agenticInputFromFlags } from '../../cli/agentic-commands.js';
import { formatRolloutResult, rolloutInputFromFlags, runPlannedRollout } from '../../cli/rollout-command.js';
import { checkTrainablePolicy } from '../../cli/rollout-policy-plan.js';
import { flattenContent } from '../../core/chat-messages.js';
import { arithProblem } from '../../environments/arith/problems.js';
import { NumberedArith } from '../support/numbered-arith.js';
import {
  type PlainOpenAIServerDouble,
  startPlainOpenAIServerDouble,
} from '../support/plain-openai-server-double.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const ENGINE_KINDS_NAMED = /reference, sglang, vllm/;

describe('rollout --policy-url at a plain OpenAI-compatible endpoint', () => {
  let env: TestWorkflowEnvironment;
  let t2: Track2Harness;
  let policy: PlainOpenAIServerDouble;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    // Answers the task right: the task number is in front of the question (NumberedArith).
    policy = await startPlainOpenAIServerDouble((messages) => {
      const task = flattenContent(messages.find((m) => m.role === 'user')?.content as never);
      const k = Number(/#(\d+)/.exec(task)?.[1] ?? -1);
      return { toolCalls: [{ name: 'submit', arguments: { answer: arithProblem(k).answer } }] };
    });
    t2 = await startTrack2(env);
    await t2.startEnvHost({
      hostId: `plain-${process.pid}`,
      registry: new Map([['arith', new NumberedArith()]]),
      policyApiKey: 'hosted-key',
    });
  }, 120_000);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
  });

  it('probes once, runs the episode text-only, scores it and says evaluate-only with the reason', async () => {
    const rolloutId = `plain-${process.pid}-${Date.now().toString(36)}`;
    const input = rolloutInputFromFlags({
      env: 'arith',
      task: 'arith-7',
      policyUrl: policy.url,
      policyModel: 'hosted-model',
      rolloutId,
      envQueue: t2.envQueue,
    });
    const logged: string[] = [];
    const result = await runPlannedRollout(env.client, t2.workflowQueue, input, {
      log: (line) => logged.push(line),
    });
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 1, mode: 'evaluate-only' });
    expect(result.modeReason).toContain(`${policy.url} has no /v1/tokenize`);
    expect(result.modeReason).toMatch(ENGINE_KINDS_NAMED);
    expect(logged[0]).toMatch(/^evaluate-only: /);
    expect(formatRolloutResult(result)).toContain('mode        evaluate-only (the policy at');
    // One probe (models, tokenize), then the episode through chat completions only, with the worker's key.
    expect(policy.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/models',
      'POST /v1/tokenize',
      'POST /v1/chat/completions',
    ]);
    expect(policy.requests.at(-1)?.authorization).toBe('Bearer hosted-key');
    // The step is recorded with its message and no token ids: nothing here could be trained.
    const step = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, 0));
    expect(step?.promptIds).toEqual([]);
    expect(step?.responseIds).toEqual([]);
    expect(step?.action.kind).toBe('tools');
  }, 60_000);

  it('refuses --mode engine and training with that URL at start, naming the engine kinds that can train', async () => {
    const before = policy.requests.length;
    const engineInput = rolloutInputFromFlags({
      env: 'arith',
      task: 'arith-1',
      policyUrl: policy.url,
      mode: 'engine',
      rolloutId: `plain-engine-${process.pid}`,
      envQueue: t2.envQueue,
    });
    await expect(runPlannedRollout(env.client, t2.workflowQueue, engineInput, {})).rejects.toThrow(
      /--mode engine refused: .*has no \/v1\/tokenize.*reference, sglang, vllm; evaluate it with --mode chat/,
    );
    await expect(checkTrainablePolicy({ url: policy.url })).rejects.toThrow(
      /^training refused: the policy at .* has no \/v1\/tokenize .*reference, sglang, vllm/,
    );
    // Only probes reached the server: no episode ran.
    expect(policy.requests.slice(before).every((r) => r.path !== '/v1/chat/completions')).toBe(true);
    // A training run with a chat policy is refused by its input's validation, naming the field.
    expect(() =>
      agenticInputFromFlags({
        run: 'plain-train',
        env: 'arith',
        tasks: 'arith-1',
        policyUrl: policy.url,
        mode: 'chat',
      }),
    ).toThrow(/policy\.mode.*engines that can train: reference, sglang, vllm/);
    // A URL with nothing OpenAI-compatible behind it is refused at start too.
    await expect(checkTrainablePolicy({ url: `${policy.url}/nothing` })).rejects.toThrow(
      /did not answer GET \/v1\/models/,
    );
  }, 30_000);
});
