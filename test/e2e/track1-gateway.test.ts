import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import { exclusionKey, sampleKey } from '../../core/turn-record.js';
import type { Method, SampleExclusion, TrainingSample } from '../../core/types.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { lineageQuery, trainingStatusQuery } from '../../workflows/training-signals.js';
import { startControlStack, untilTrainingStatus } from '../support/control-stack.js';
import { engineCalls } from '../support/engine-calls.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { findRecordedTurn } from '../support/turn-lookup.js';

// A user's view of Track 1, per method: an OpenAI client talks to the gateway (non-streaming, streaming,
// and a tool loop), the fake judge votes by rule, and the run trains and publishes new policy versions.

const TOOLS: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

interface Expected {
  samples: Record<string, { kind: TrainingSample['kind']; reward: number }>;
  exclusions: Record<string, SampleExclusion['reason']>;
  batchSize: number;
}

describe('Track 1 through the gateway', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let judge: FakeJudge;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'track1-e2e-'));
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')), trainer: true });
    judge = await startFakeJudge();
  }, 180_000);

  afterAll(async () => {
    await engine?.stop();
    await judge?.close();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function runConversations(method: Method, expected: (ids: Ids) => Expected): Promise<void> {
    const taskQueue = uniqueTaskQueue(`e2e-${method}`);
    const ids: Ids = { s1: `s1-${taskQueue}`, s2: `s2-${taskQueue}`, s3: `s3-${taskQueue}` };
    const want = expected(ids);
    const loaded = loadConfig(
      {},
      {
        runId: `e2e-${taskQueue}`.slice(0, 64),
        method,
        dataDir: join(dir, method),
        engine: { url: engine.url },
        teacher: { url: engine.url },
        judge: { baseUrl: judge.url, model: 'fake-judge' },
        training: { batchSize: want.batchSize, learningRate: 1e-3 },
        gateway: { port: 0 },
        temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    const config: OpenClawConfig = loaded.config;
    const stack = await startControlStack(config, env);
    try {
      const { store, openai: client } = stack;
      const chat = async (
        session: string,
        messages: ChatCompletionMessageParam[],
        done = false,
        extra = {},
      ) => {
        const headers = { 'X-Session-Id': session, ...(done && { 'X-Session-Done': 'true' }) };
        const response = await client.chat.completions.create(
          { model: 'tiny', messages, max_tokens: 6, temperature: 1, seed: messages.length, ...extra },
          { headers },
        );
        return response.choices[0]?.message as ChatCompletionMessageParam;
      };
      const stream = async (session: string, messages: ChatCompletionMessageParam[], done = false) => {
        const headers = { 'X-Session-Id': session, ...(done && { 'X-Session-Done': 'true' }) };
        const chunks = await client.chat.completions.create(
          { model: 'tiny', messages, max_tokens: 6, temperature: 1, seed: 7, stream: true },
          { headers },
        );
        let content = '';
        for await (const chunk of chunks) content += chunk.choices[0]?.delta?.content ?? '';
        return { role: 'assistant', content } as ChatCompletionMessageParam;
      };

      // s1: non-streaming; thanks, then a correction, then the end.
      const m1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What should I cook tonight?' }];
      const a1 = await chat(ids.s1, m1);
      const m2 = [...m1, a1, { role: 'user' as const, content: 'thanks, sounds good' }];
      const a2 = await chat(ids.s1, m2);
      await chat(ids.s1, [...m2, a2, { role: 'user', content: 'that is wrong, I am vegetarian' }], true);

      // s2: streaming, relayed chunk by chunk.
      const n1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me a joke.' }];
      const b1 = await stream(ids.s2, n1);
      await stream(ids.s2, [...n1, b1, { role: 'user', content: 'haha thanks' }], true);

      // s3: a tool loop; the tool's result is the next state of the turn that called it. The agent sends the
      // model's own reply back (with whatever tool call it made), then the tool's output.
      const t1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
      const called = (await chat(ids.s3, t1, false, { tools: TOOLS })) as { tool_calls?: { id: string }[] };
      await chat(
        ids.s3,
        [
          ...t1,
          called as ChatCompletionMessageParam,
          {
            role: 'tool',
            tool_call_id: called.tool_calls?.[0]?.id ?? 'call_1',
            content: 'sunny, 21C; thanks for asking',
          },
        ],
        true,
        { tools: TOOLS },
      );

      // The expectations name turns by session and position; the store knows their ids.
      const resolve = async <T>(byPosition: Record<string, T>): Promise<Record<string, T>> => {
        const resolved: Record<string, T> = {};
        for (const [key, value] of Object.entries(byPosition)) {
          const colon = key.lastIndexOf(':');
          const record = await findRecordedTurn(
            store,
            scopedSessionId(LOCAL_TENANT, key.slice(0, colon)),
            Number(key.slice(colon + 1)),
          );
          if (!record) throw new Error(`${method}: no turn recorded for ${key}`);
          resolved[record.sampleId] = value;
        }
        return resolved;
      };
      want.samples = await resolve(want.samples);
      want.exclusions = await resolve(want.exclusions);
      const settledIds = [...Object.keys(want.samples), ...Object.keys(want.exclusions)];
      const trainedSamples = Object.keys(want.samples).length;
      const steps = Math.floor(trainedSamples / want.batchSize);
      await untilTrainingStatus(
        env.client,
        config.runId,
        (status) =>
          status.samplesExcluded + status.samplesTrained + status.pendingSamples === settledIds.length &&
          status.stepsCompleted === steps,
      );
      const training = env.client.workflow.getHandle(trainingWorkflowId(config.runId));

      for (const [id, sample] of Object.entries(want.samples)) {
        const stored = await store.get<TrainingSample>(sampleKey(id));
        expect(stored, id).toMatchObject({ kind: sample.kind, reward: sample.reward, method });
        expect(stored?.tokens.length, id).toBeGreaterThan(stored?.responseLength ?? 0);
        expect(await store.get(exclusionKey(id)), id).toBeUndefined();
      }
      for (const [id, reason] of Object.entries(want.exclusions)) {
        expect((await store.get<SampleExclusion>(exclusionKey(id)))?.reason, id).toBe(reason);
        expect(await store.get(sampleKey(id)), id).toBeUndefined();
      }

      const status = await training.query(trainingStatusQuery);
      expect(status.policyVersion).toBe(steps);
      expect(status.samplesTrained).toBe(steps * want.batchSize);
      expect(String((await engineCalls(engine.url).modelInfo()).weight_version)).toBe(String(steps));
      const lineage = await training.query(lineageQuery);
      expect(lineage.map((entry) => entry.version)).toEqual(Array.from({ length: steps }, (_, i) => i + 1));
      const trained = lineage.flatMap((entry) => entry.sampleIds);
      expect(new Set(trained).size).toBe(trained.length);
      for (const id of trained) expect(Object.keys(want.samples)).toContain(id);
      // An open gateway's one tenant: every sample of every version is `local`'s.
      for (const entry of lineage) expect(entry.tenants).toEqual({ [LOCAL_TENANT]: entry.sampleIds.length });
    } finally {
      await stack.close();
    }
  }

  interface Ids {
    s1: string;
    s2: string;
    s3: string;
  }

  it('rl: judge votes become rewards, neutral and last turns are excluded', async () => {
    await runConversations('rl', (ids) => ({
      batchSize: 2,
      samples: {
        [`${ids.s1}:1`]: { kind: 'rl', reward: 1 },
        [`${ids.s1}:2`]: { kind: 'rl', reward: -1 },
        [`${ids.s2}:1`]: { kind: 'rl', reward: 1 },
        [`${ids.s3}:1`]: { kind: 'rl', reward: 1 },
      },
      exclusions: {
        [`${ids.s1}:3`]: 'no-next-state',
        [`${ids.s2}:2`]: 'no-next-state',
        [`${ids.s3}:2`]: 'no-next-state',
      },
    }));
  }, 150_000);

  it('opd: only turns with an accepted hint train, with the teacher signal', async () => {
    await runConversations('opd', (ids) => ({
      batchSize: 3,
      samples: {
        [`${ids.s1}:1`]: { kind: 'opd', reward: 0 },
        [`${ids.s2}:1`]: { kind: 'opd', reward: 0 },
        [`${ids.s3}:1`]: { kind: 'opd', reward: 0 },
      },
      exclusions: {
        [`${ids.s1}:2`]: 'no-hint',
        [`${ids.s1}:3`]: 'no-next-state',
        [`${ids.s2}:2`]: 'no-next-state',
        [`${ids.s3}:2`]: 'no-next-state',
      },
    }));
  }, 150_000);

  it('combine: one sample per turn, hint and vote together', async () => {
    await runConversations('combine', (ids) => ({
      batchSize: 2,
      samples: {
        [`${ids.s1}:1`]: { kind: 'opd+rl', reward: 1 },
        [`${ids.s1}:2`]: { kind: 'rl', reward: -1 },
        [`${ids.s2}:1`]: { kind: 'opd+rl', reward: 1 },
        [`${ids.s3}:1`]: { kind: 'opd+rl', reward: 1 },
      },
      exclusions: {
        [`${ids.s1}:3`]: 'no-next-state',
        [`${ids.s2}:2`]: 'no-next-state',
        [`${ids.s3}:2`]: 'no-next-state',
      },
    }));
  }, 150_000);
});
