// Track 1 with a real vLLM serving the policy (its CPU build, .venv-vllm) and the reference engine training
// beside it, as `dev --engine vllm` runs them: an OpenAI client talks to the gateway (non-streaming,
// streaming, a tool loop); the recorded tokens are vLLM's own; the run trains epochs (combine: the teacher
// log-probs come from vLLM too), publishes each version into vLLM, and the next turns are served and
// recorded with the new version. Then vLLM is killed (-9) mid-stream and restarted: every turn that was
// acknowledged is still there, the interrupted one is not, and its retry is recorded. First, a request that
// names no sampling field: the gateway sends the model's generation_config.json values (what vLLM's own default,
// `--generation-config auto`, would use), vLLM samples at exactly them and reports log-probs at them, and the
// record says so. vLLM and the trainer run behind the engine token, as `dev` starts them with one: every call
// the gateway, the control worker and the publishing make carries it.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { latestPublished } from '../../cli/engine-launch.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { VllmAdapter } from '../../engines/vllm-adapter.js';
import { startVllm, type VllmProcess } from '../../engines/vllm-process.js';
import { type RunningGateway, startGateway } from '../../gateway/main.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingStatusQuery } from '../../workflows/training-signals.js';
import { freePort } from '../gateway/gateway-fixture.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { findRecordedTurn } from '../support/turn-lookup.js';
import { createTestControlWorker } from '../support/workflow-bundle.js';

const MODEL = 'default';
const TOKEN = `engine-token-${process.pid}`;
const AUTH = { authorization: `Bearer ${TOKEN}` };
const QWEN3_SAMPLING = { temperature: 0.6, top_p: 0.95, top_k: 20 };
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

describe('Track 1 with vLLM serving and the reference engine training', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let model: string;
  let vllm: VllmProcess;
  let vllmPort: number;
  let trainer: EngineProcess;
  let judge: FakeJudge;
  let config: OpenClawConfig;
  let gateway: RunningGateway;
  let store: FileSampleStore;
  let stopWorker: () => Promise<void>;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'track1-vllm-'));
    model = await makeTinyModel(join(dir, 'model'), 0, 64);
    // Sampling defaults as a Qwen3 checkpoint ships them (the project starts vLLM with `--generation-config vllm`,
    // so only the gateway reads them).
    const generationConfig = join(model, 'generation_config.json');
    const shipped = JSON.parse(await readFile(generationConfig, 'utf8')) as Record<string, unknown>;
    await writeFile(generationConfig, JSON.stringify({ ...shipped, ...QWEN3_SAMPLING }));
    vllmPort = await freePort();
    [vllm, trainer, judge] = await Promise.all([
      startVllm({ model, servedModelName: MODEL, device: 'cpu', port: vllmPort, apiKey: TOKEN }),
      startReferenceEngine({ model, trainer: true, env: { OPENCLAW_ENGINE_TOKEN: TOKEN } }),
      startFakeJudge(),
    ]);
    const taskQueue = uniqueTaskQueue('e2e-vllm');
    const loaded = loadConfig(
      {},
      {
        runId: `vllm-${taskQueue}`.slice(0, 64),
        method: 'combine',
        dataDir: join(dir, 'data'),
        engine: { kind: 'vllm', url: vllm.url, token: TOKEN },
        trainer: { url: trainer.url },
        teacher: { url: vllm.url },
        judge: { baseUrl: judge.url, model: 'fake-judge' },
        training: { batchSize: 2, learningRate: 1e-3 },
        gateway: { port: 0 },
        temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    config = loaded.config;
    store = new FileSampleStore(join(config.dataDir, 'store'));
    const worker = await createTestControlWorker(config, env, { store });
    const running = worker.run();
    stopWorker = async () => {
      worker.shutdown();
      await running.catch(() => undefined);
    };
    gateway = await startGateway(config, { temporal: env.client, logger: false });
  }, 600_000);

  afterAll(async () => {
    await gateway?.close();
    await stopWorker?.();
    await vllm?.stop();
    await trainer?.stop();
    await judge?.close();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const client = () => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const headers = (session: string, done = false) => ({
    'X-Session-Id': session,
    ...(done && { 'X-Session-Done': 'true' }),
  });
  const record = (session: string, turn: number) =>
    findRecordedTurn(store, scopedSessionId(LOCAL_TENANT, session), turn);

  async function chat(session: string, messages: ChatCompletionMessageParam[], done = false, extra = {}) {
    const body = { model: MODEL, messages, max_tokens: 6, temperature: 1, seed: messages.length, ...extra };
    const response = await client().chat.completions.create(body as ChatCompletionCreateParamsNonStreaming, {
      headers: headers(session, done),
    });
    return response.choices[0]?.message as ChatCompletionMessageParam;
  }

  async function stream(session: string, messages: ChatCompletionMessageParam[], done = false) {
    const chunks = await client().chat.completions.create(
      { model: MODEL, messages, max_tokens: 6, temperature: 0, stream: true },
      { headers: headers(session, done) },
    );
    let content = '';
    for await (const chunk of chunks) content += chunk.choices[0]?.delta?.content ?? '';
    return { role: 'assistant', content } as ChatCompletionMessageParam;
  }

  /** The same request straight to vLLM, greedy, with its own exact-token fields. */
  async function vllmDirect(messages: ChatCompletionMessageParam[]) {
    const response = await fetch(`${vllm.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify({ model: MODEL, messages, max_tokens: 6, temperature: 0, return_token_ids: true }),
    });
    const body = (await response.json()) as {
      prompt_token_ids: number[];
      choices: { token_ids: number[] }[];
    };
    return { promptIds: body.prompt_token_ids, responseIds: body.choices[0]?.token_ids ?? [] };
  }

  async function settled(steps: number) {
    const training = env.client.workflow.getHandle(trainingWorkflowId(config.runId));
    const deadline = Date.now() + 240_000;
    for (;;) {
      const status = await training.query(trainingStatusQuery).catch(() => null);
      if (status && status.stepsCompleted >= steps && status.policyVersion >= steps) return status;
      if (Date.now() > deadline)
        throw new Error(`the run did not train ${steps} steps: ${JSON.stringify(status)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  it('vLLM refuses a caller without the token', async () => {
    const refused = await fetch(`${vllm.url}/v1/models`);
    expect(refused.status).toBe(401);
    const allowed = await fetch(`${vllm.url}/v1/models`, { headers: AUTH });
    expect(allowed.status).toBe(200);
  });

  it("sends a request without sampling fields at the model's generation_config; vLLM samples at it, as recorded", async () => {
    // The suite's gateway does not read the model folder (it sends the neutral values); this one does. The
    // model's default temperature (0.6) is one a vLLM teacher cannot score at, so combine is refused at start;
    // rl needs no teacher.
    const readingConfig = { ...config, engine: { ...config.engine, model } };
    await expect(startGateway(readingConfig, { temporal: env.client, store, logger: false })).rejects.toThrow(
      /vLLM as teacher .* scores them at temperature 1 only/,
    );
    const reading = await startGateway(
      { ...readingConfig, method: 'rl' },
      { temporal: env.client, store, logger: false },
    );
    try {
      const session = `vllm-defaults-${Date.now().toString(36)}`;
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Name a colour.' }];
      const openai = new OpenAI({ baseURL: `${reading.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      await openai.chat.completions.create(
        { model: MODEL, messages, max_tokens: 6, seed: 5 },
        {
          headers: headers(session, true),
        },
      );
      const recorded = await record(session, 1);
      expect(recorded?.sampling).toEqual({
        temperature: 0.6,
        topP: 0.95,
        topK: 20,
        minP: null,
        maxTokens: 6,
        seed: 5,
        constraints: [],
      });

      // vLLM asked directly with those values gives the same tokens and the same log-probs (after temperature
      // and top-k/top-p: `--logprobs-mode processed_logprobs`); at the neutral values the same seed gives other
      // log-probs, so the record names the distribution the tokens were drawn from.
      const sampled = async (sampling: Record<string, number>) => {
        const response = await fetch(`${vllm.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...AUTH },
          body: JSON.stringify({
            model: MODEL,
            messages,
            max_tokens: 6,
            seed: 5,
            logprobs: true,
            return_token_ids: true,
            ...sampling,
          }),
        });
        const choice = (
          (await response.json()) as {
            choices: { token_ids: number[]; logprobs: { content: { logprob: number }[] } }[];
          }
        ).choices[0];
        return { ids: choice?.token_ids, logprobs: choice?.logprobs.content.map((c) => c.logprob) ?? [] };
      };
      const same = await sampled(QWEN3_SAMPLING);
      expect(same.ids).toEqual(recorded?.responseIds);
      same.logprobs.forEach((lp, i) => {
        expect(lp).toBeCloseTo(recorded?.responseLogProbs[i] ?? Number.NaN, 4);
      });
      const neutral = await sampled({ temperature: 1, top_p: 1, top_k: -1 });
      expect(neutral.logprobs).not.toEqual(same.logprobs);
      // And vLLM itself, as the project starts it (`--generation-config vllm`), fills absent sampling fields
      // with its own neutral defaults, not the model folder's: a request that names none is sampled as the
      // neutral one, token for token and log-prob for log-prob.
      const absent = await sampled({});
      expect(absent.ids).toEqual(neutral.ids);
      expect(absent.logprobs).toEqual(neutral.logprobs);
    } finally {
      await reading.close();
    }
  }, 120_000);

  it('captures vLLM tokens, trains, publishes into vLLM, and serves the next turns with the new version', async () => {
    const run = Date.now().toString(36);
    const s1 = `vllm-s1-${run}`;
    const s2 = `vllm-s2-${run}`;
    const s3 = `vllm-s3-${run}`;

    // s1: non-streaming; thanks, then a correction, then the end.
    const m1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What should I cook tonight?' }];
    const a1 = await chat(s1, m1);
    const first = await record(s1, 1);
    expect(first?.policyVersion).toBe(0);
    expect(first?.responseLogProbs).toHaveLength(first?.responseIds.length ?? -1);
    const m2 = [...m1, a1, { role: 'user' as const, content: 'thanks, sounds good' }];
    const a2 = await chat(s1, m2);
    await chat(s1, [...m2, a2, { role: 'user', content: 'that is wrong, I am vegetarian' }], true);

    // s2: streaming, greedy: the recorded ids are the ones vLLM itself gives for the same request.
    const n1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me a joke.' }];
    const b1 = await stream(s2, n1);
    const streamed = await record(s2, 1);
    const direct = await vllmDirect(n1);
    expect(streamed?.promptIds).toEqual(direct.promptIds);
    expect(streamed?.responseIds).toEqual(direct.responseIds);
    expect(streamed?.responseLogProbs).toHaveLength(direct.responseIds.length);
    await stream(s2, [...n1, b1, { role: 'user', content: 'haha thanks' }], true);

    // s3: a tool loop (vLLM's hermes parser); the tool's result is the next state of the turn that called it.
    const t1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    // The agent sends the model's own reply back (with whatever tool call it made), then the tool's output: a
    // turn pairs with the reply it kept.
    const called = (await chat(s3, t1, false, { tools: TOOLS })) as { tool_calls?: { id: string }[] };
    expect((await record(s3, 1))?.tools).toEqual(TOOLS);
    await chat(
      s3,
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

    // Four samples (s1:1, s1:2, s2:1, s3:1) in batches of two: two epochs, each published into vLLM.
    const status = await settled(2);
    expect(status.policyVersion).toBe(2);
    const serving = new VllmAdapter(vllm.url, { headers: AUTH });
    expect(await serving.weightVersion()).toBe('2');

    // The next turn is served by the published weights and recorded with their version.
    const s4 = `vllm-s4-${run}`;
    await chat(s4, [{ role: 'user', content: 'And now?' }]);
    expect((await record(s4, 1))?.policyVersion).toBe(2);
    const s4stream = `vllm-s4s-${run}`;
    await stream(s4stream, [{ role: 'user', content: 'And streaming?' }]);
    expect((await record(s4stream, 1))?.policyVersion).toBe(2);
  }, 600_000);

  it('kill -9 of vLLM mid-stream loses nothing acknowledged; after a restart the retry is recorded', async () => {
    const run = Date.now().toString(36);
    const acknowledged = `vllm-ack-${run}`;
    await chat(acknowledged, [{ role: 'user', content: 'Before the crash.' }]);
    expect(await record(acknowledged, 1)).toBeDefined();

    const session = `vllm-crash-${run}`;
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'A long story, please.' }];
    const chunks = await client().chat.completions.create(
      { model: MODEL, messages, max_tokens: 3000, temperature: 1, stream: true, ignore_eos: true } as never,
      { headers: headers(session) },
    );
    let killed = false;
    let sawDone = true;
    try {
      for await (const chunk of chunks as unknown as AsyncIterable<unknown>) {
        if (!killed) {
          vllm.kill();
          killed = true;
        }
        void chunk;
      }
    } catch {
      sawDone = false;
    }
    expect(killed).toBe(true);
    expect(sawDone).toBe(false);
    expect(await record(session, 1)).toBeUndefined();
    expect(await record(acknowledged, 1)).toBeDefined();

    // Restarted on the same port, vLLM serves the base weights until the run's newest version is loaded
    // again, as `engine` and `dev` do on start.
    const crashed = vllm.process;
    if (crashed.exitCode === null && crashed.signalCode === null)
      await new Promise((resolve) => crashed.once('exit', resolve));
    vllm = await startVllm({ model, servedModelName: MODEL, device: 'cpu', port: vllmPort, apiKey: TOKEN });
    const latest = await latestPublished(config);
    expect(latest?.version).toBe(2);
    if (latest)
      await new VllmAdapter(vllm.url, { headers: AUTH }).publishWeights({
        path: latest.checkpoint,
        version: String(latest.version),
      });
    await chat(session, messages);
    expect((await record(session, 1))?.policyVersion).toBe(2);
  }, 600_000);
});
