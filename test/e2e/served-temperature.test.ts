// One temperature from the client to the trained sample, on real parts: the real gateway, a real Temporal dev
// server, the reference engine (serving and training) behind a proxy that keeps every request it forwards, and
// the LLM-judge stand-in. A client sends one session at T = 0.6 and one that names no temperature (the gateway
// then sends the model's generation_config.json value, 0.8 here, so a default can not pass as "absent, so 1");
// both are judged and trained in one combine epoch. At every step the temperature is the one served: the
// engine was asked to sample at it, the turn record, the teacher prefill and the sample carry it, the trainer's
// /train_step request has it with the served log-probs, and the trainer's own log-probs of each response,
// computed at it on the weights that served it, are the served ones (importance ratio 1), where at T = 1 they
// are not.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import { sampleKey, type TurnRecord, teacherKey } from '../../core/turn-record.js';
import type { TrainingSample } from '../../core/types.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { lineageQuery } from '../../workflows/training-signals.js';
import { startControlStack, untilTrainingStatus } from '../support/control-stack.js';
import { type CountingProxy, startCountingProxy } from '../support/counting-proxy.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { startTranscriptJudge, type TranscriptJudge } from '../support/transcript-judge-server.js';
import { findRecordedTurn } from '../support/turn-lookup.js';

const T = 0.6;
/** The model folder's generation_config.json temperature: what a request without one is served at. */
const MODEL_DEFAULT_T = 0.8;
const CORRECTION = 'No, I asked for a vegetarian dinner, something with lentils.';
const THANKS = 'Ha, that one made me laugh. Thanks!';

interface TrainStepBody {
  samples: { tokens: number[]; rollout_log_probs: number[]; temperature: number }[];
}

const meanAbsDiff = (a: number[], b: number[]) =>
  a.reduce((sum, value, i) => sum + Math.abs(value - (b[i] ?? Number.NaN)), 0) / a.length;

describe('the served temperature, from the gateway to the trained sample', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let model: string;
  let engine: EngineProcess;
  let proxy: CountingProxy;
  let judge: TranscriptJudge;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'served-temperature-'));
    model = await makeTinyModel(join(dir, 'model'));
    const generationConfig = join(model, 'generation_config.json');
    const shipped = JSON.parse(await readFile(generationConfig, 'utf8')) as Record<string, unknown>;
    await writeFile(generationConfig, JSON.stringify({ ...shipped, temperature: MODEL_DEFAULT_T }));
    [engine, judge] = await Promise.all([
      startReferenceEngine({ model, trainer: true }),
      startTranscriptJudge({
        verdicts: {
          [CORRECTION]: { score: 1, hint: 'The user wants a vegetarian dinner with lentils.' },
          [THANKS]: { score: 1 },
        },
      }),
    ]);
    proxy = await startCountingProxy(engine.url);
  }, 180_000);

  afterAll(async () => {
    await proxy?.close();
    await engine?.stop();
    await judge?.close();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves, records, judges and trains each turn at the temperature it was sampled at', async () => {
    const taskQueue = uniqueTaskQueue('served-temperature');
    const loaded = loadConfig(
      {},
      {
        runId: `temperature-${taskQueue}`.slice(0, 64),
        method: 'combine',
        dataDir: join(dir, 'data'),
        // Everything reaches the engine through the proxy: the gateway, the teacher, the trainer. The gateway
        // reads the sampling defaults of `engine.model`.
        engine: { url: proxy.url, model },
        teacher: { url: proxy.url },
        judge: { baseUrl: judge.url, model: 'judge' },
        training: { batchSize: 2, learningRate: 1e-3 },
        gateway: { port: 0 },
        temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    const config = loaded.config;
    const stack = await startControlStack(config, env);
    try {
      const { store } = stack;
      const chat = async (
        session: string,
        messages: ChatCompletionMessageParam[],
        sampling: { temperature?: number },
        done = false,
      ) => {
        const response = await stack.openai.chat.completions.create(
          { model: 'tiny', messages, max_tokens: 6, seed: messages.length, ...sampling },
          { headers: { 'X-Session-Id': session, ...(done && { 'X-Session-Done': 'true' }) } },
        );
        return response.choices[0]?.message as ChatCompletionMessageParam;
      };
      const hot = `hot-${taskQueue}`;
      const plain = `plain-${taskQueue}`;

      const m1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What should I cook tonight?' }];
      const a1 = await chat(hot, m1, { temperature: T });
      const hotTurn = (await findRecordedTurn(store, scopedSessionId(LOCAL_TENANT, hot), 1)) as TurnRecord;
      // Before anything trains (a batch needs the second session): the served log-probs are those of T, and
      // at T = 1 the same tokens score visibly otherwise, so a trainer at 1 would be caught below.
      const direct = new ReferenceAdapter(engine.url);
      const prefill = (temperature: number) =>
        direct.prefillLogprobs({
          inputIds: [...hotTurn.promptIds, ...hotTurn.responseIds],
          responseLength: hotTurn.responseIds.length,
          topK: 0,
          temperature,
        });
      const atT = meanAbsDiff((await prefill(T)).logprobs, hotTurn.responseLogProbs);
      const atOne = meanAbsDiff((await prefill(1)).logprobs, hotTurn.responseLogProbs);
      expect(atT).toBeLessThan(1e-4);
      expect(atOne).toBeGreaterThan(0.05);
      await chat(hot, [...m1, a1, { role: 'user', content: CORRECTION }], { temperature: T }, true);

      const n1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me a joke.' }];
      const b1 = await chat(plain, n1, {});
      const plainTurn = (await findRecordedTurn(
        store,
        scopedSessionId(LOCAL_TENANT, plain),
        1,
      )) as TurnRecord;
      await chat(plain, [...n1, b1, { role: 'user', content: THANKS }], {}, true);

      // The engine was asked to sample at exactly these, in the order the client sent them.
      const served = proxy
        .bodies('/v1/chat/completions')
        .map((body) => (body as { temperature?: number }).temperature);
      expect(served).toEqual([T, T, MODEL_DEFAULT_T, MODEL_DEFAULT_T]);
      expect(hotTurn.sampling?.temperature).toBe(T);
      expect(plainTurn.sampling?.temperature).toBe(MODEL_DEFAULT_T);

      await untilTrainingStatus(env.client, config.runId, (status) => status.stepsCompleted >= 1);
      const training = env.client.workflow.getHandle(trainingWorkflowId(config.runId));
      const [epoch] = await training.query(lineageQuery);
      expect([...(epoch?.sampleIds ?? [])].sort()).toEqual([hotTurn.sampleId, plainTurn.sampleId].sort());
      expect(judge.unexpected).toEqual([]);

      // The samples the epoch trained, and the teacher prefill of the hinted one, carry the served temperature.
      const hotSample = await store.get<TrainingSample>(sampleKey(hotTurn.sampleId));
      const plainSample = await store.get<TrainingSample>(sampleKey(plainTurn.sampleId));
      expect(hotSample).toMatchObject({ kind: 'opd+rl', reward: 1, temperature: T });
      expect(plainSample).toMatchObject({ kind: 'rl', reward: 1, temperature: MODEL_DEFAULT_T });
      expect((await store.get<{ temperature: number }>(teacherKey(hotTurn.sampleId)))?.temperature).toBe(T);

      // What the trainer was sent: each response with its served log-probs and the temperature they are of.
      const [step] = proxy.bodies('/train_step') as TrainStepBody[];
      for (const [turn, temperature] of [
        [hotTurn, T],
        [plainTurn, MODEL_DEFAULT_T],
      ] as const) {
        const tokens = [...turn.promptIds, ...turn.responseIds];
        const sent = step?.samples.find((s) => s.tokens.join() === tokens.join());
        expect(sent?.temperature, turn.sessionId).toBe(temperature);
        expect(sent?.rollout_log_probs, turn.sessionId).toEqual(turn.responseLogProbs);
      }
      // The trainer's log-probs at each sample's temperature, on the weights that served them, against the
      // served ones: mean |log π_θ − log π_served| over the batch, i.e. an importance ratio of 1.
      expect(epoch?.metrics.train_rollout_logprob_abs_diff).toBeLessThan(1e-4);
    } finally {
      await stack.close();
    }
  }, 150_000);
});
