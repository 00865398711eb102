// Explicit feedback on real parts: the real gateway, the reference engine (policy, trainer and teacher), the
// run's Temporal server and a control worker. The judge is the tiny policy model itself, which cannot judge (its
// votes never parse): whatever trains here trains because a person said so, as with `openclaw-rl dev`'s
// embedded default.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import { exclusionKey, sampleKey, teacherKey } from '../../core/turn-record.js';
import type { Method, SampleExclusion, TrainingSample } from '../../core/types.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { apiKeyName } from '../../gateway/auth.js';
import { startGateway } from '../../gateway/main.js';
import { scoreTurnWorkflowId, sessionWorkflowId, trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { sessionStatusQuery } from '../../workflows/session-signals.js';
import { lineageQuery } from '../../workflows/training-signals.js';
import { type ControlStack, startControlStack, untilTrainingStatus } from '../support/control-stack.js';
import { freePort } from '../support/free-port.js';
import { saveHistory } from '../support/histories.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { waitFor } from '../support/wait-for.js';

type Completion = OpenAI.Chat.ChatCompletion & { session_id?: string; turn_id?: string };
type Stored<T> = T & { judge?: { feedback?: { rating: number | null; correction: string | null } } };

interface FeedbackAnswer {
  status: number;
  body: Record<string, unknown> & { error?: { message: string; type: string } };
}

describe('explicit feedback through the real gateway', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'feedback-e2e-'));
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')), trainer: true });
  }, 180_000);

  afterAll(async () => {
    await engine?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  function configFor(method: Method, batchSize: number, extra: Record<string, unknown> = {}): OpenClawConfig {
    const taskQueue = uniqueTaskQueue(`feedback-${method}`);
    const loaded = loadConfig(
      {},
      {
        runId: `fb-${taskQueue}`.slice(0, 64),
        method,
        dataDir: join(dir, taskQueue),
        engine: { url: engine.url },
        teacher: { url: engine.url },
        // A judge that cannot judge: the tiny policy model answers, and no vote parses.
        judge: { baseUrl: `${engine.url}/v1`, model: 'tiny', votes: 1, maxTokens: 8 },
        training: { batchSize, learningRate: 1e-3 },
        gateway: { port: 0 },
        temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
        ...extra,
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    return loaded.config;
  }

  async function chat(
    stack: ControlStack,
    session: string,
    messages: ChatCompletionMessageParam[],
    options: { done?: boolean; stream?: boolean } = {},
  ): Promise<{ reply: ChatCompletionMessageParam; turnId: string; sessionId: string }> {
    const headers = { 'X-Session-Id': session, ...(options.done && { 'X-Session-Done': 'true' }) };
    const params = { model: 'tiny', messages, max_tokens: 6, temperature: 1, seed: messages.length };
    if (options.stream) {
      const chunks = await stack.openai.chat.completions.create({ ...params, stream: true }, { headers });
      let content = '';
      let last: Record<string, unknown> = {};
      for await (const chunk of chunks) {
        content += chunk.choices[0]?.delta?.content ?? '';
        last = chunk as unknown as Record<string, unknown>;
      }
      // The turn's id comes on the stream's last chunk before [DONE].
      return {
        reply: { role: 'assistant', content },
        turnId: String(last.turn_id),
        sessionId: String(last.session_id),
      };
    }
    const response = (await stack.openai.chat.completions.create(params, { headers })) as Completion;
    return {
      reply: response.choices[0]?.message as ChatCompletionMessageParam,
      turnId: String(response.turn_id),
      sessionId: String(response.session_id),
    };
  }

  async function feedback(url: string, body: unknown, apiKey?: string): Promise<FeedbackAnswer> {
    const response = await fetch(`${url}/v1/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(apiKey && { authorization: `Bearer ${apiKey}` }) },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as FeedbackAnswer['body'] };
  }

  const sampleIdOf = (turnId: string) => scopedSessionId(LOCAL_TENANT, turnId);

  /** The run's lineage entry of `version`: which samples made it. */
  async function lineageAt(runId: string, version: number) {
    const entries = await env.client.workflow
      .getHandle(trainingWorkflowId(runId))
      .query(lineageQuery, { version });
    return entries[0];
  }

  it('rl: a thumbs-down right after a reply trains it at once with reward -1; sending it twice changes nothing; a rating after training is kept against the version', async () => {
    // A user says 👎 before the conversation goes on: no judge can vote here, yet the turn must train now, once.
    const config = configFor('rl', 1);
    const stack = await startControlStack(config, env);
    try {
      const session = 'rate-now';
      const { turnId, sessionId } = await chat(stack, session, [{ role: 'user', content: 'Name a colour.' }]);
      expect(sessionId).toBe(session);
      expect(turnId).toMatch(/^rate-now:1-[0-9a-f]{16}$/);

      const first = await feedback(stack.gateway.url, { turn_id: turnId, rating: -1 });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({
        object: 'feedback',
        turn_id: turnId,
        session_id: session,
        rating: -1,
      });
      expect(first.body.id).toMatch(/^fb-[0-9a-f]{16}$/);
      expect(first.body.created).toBe(true);

      const status = await untilTrainingStatus(env.client, config.runId, (s) => s.policyVersion >= 1);
      expect(status.samplesTrained).toBe(1);
      const sample = await stack.store.get<Stored<TrainingSample>>(sampleKey(sampleIdOf(turnId)));
      expect(sample).toMatchObject({ kind: 'rl', reward: -1 });
      expect(sample?.judge?.feedback?.rating).toBe(-1);

      // The same feedback again: the same id, nothing new anywhere.
      const again = await feedback(stack.gateway.url, { turn_id: turnId, rating: -1 });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: first.body.id, created: false });
      const sessionHandle = env.client.workflow.getHandle(
        sessionWorkflowId(scopedSessionId(LOCAL_TENANT, session)),
      );
      await waitFor(async () => (await stack.store.outbox.stats()).depth === 0, 20_000, 'the outbox');
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const sessionStatus = await sessionHandle.query(sessionStatusQuery);
      expect(sessionStatus.feedbackReceived).toBe(1);
      expect(sessionStatus.amendments).toBe(0);

      // The user changes their mind after the turn trained: recorded against v1, nothing trains twice.
      const late = await feedback(stack.gateway.url, { session_id: session, rating: 1 });
      expect(late.status).toBe(200);
      expect(late.body.turn_id).toBe(turnId);
      const after = await untilTrainingStatus(
        env.client,
        config.runId,
        (s) => (s.feedback?.afterTraining.length ?? 0) >= 1,
      );
      expect(after.feedback?.afterTraining[0]).toMatchObject({ sampleId: sampleIdOf(turnId), version: 1 });
      expect(after.samplesTrained).toBe(1);
      expect(after.pendingSamples).toBe(0);
    } finally {
      await stack.close();
    }
  }, 240_000);

  it('rl: feedback after the judge excluded two turns turns the exclusions into samples that train, streamed turns named by their last chunk', async () => {
    // A user talks, the session ends (the judge cannot vote: both turns excluded), then they rate both replies.
    const config = configFor('rl', 2);
    const stack = await startControlStack(config, env);
    try {
      const session = 'rate-later';
      const m1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Say hello.' }];
      const t1 = await chat(stack, session, m1);
      const t2 = await chat(stack, session, [...m1, t1.reply, { role: 'user', content: 'again' }], {
        done: true,
        stream: true,
      });
      expect(t2.turnId).toMatch(/^rate-later:2-[0-9a-f]{16}$/);
      await untilTrainingStatus(env.client, config.runId, (s) => s.samplesExcluded >= 2);
      const excluded = await stack.store.get<SampleExclusion>(exclusionKey(sampleIdOf(t1.turnId)));
      expect(excluded?.reason).toBe('neutral-score');

      const onFirst = await feedback(stack.gateway.url, { session_id: session, position: 1, rating: 1 });
      expect(onFirst.body.turn_id).toBe(t1.turnId);
      const onLatest = await feedback(stack.gateway.url, { session_id: session, rating: 0.5 });
      expect(onLatest.body.turn_id).toBe(t2.turnId);

      const status = await untilTrainingStatus(env.client, config.runId, (s) => s.policyVersion >= 1);
      expect(status.feedback?.amended).toBe(2);
      const entry = await lineageAt(config.runId, 1);
      const trained = entry?.sampleIds ?? [];
      expect(trained).toHaveLength(2);
      expect(trained.every((id) => id.includes('~fb-'))).toBe(true);
      const rewards = await Promise.all(
        trained.map(async (id) => (await stack.store.get<TrainingSample>(sampleKey(id)))?.reward),
      );
      expect(rewards.sort()).toEqual([0.5, 1]);

      // `RECORD_HISTORIES=1` refreshes the histories the replay test checks these workflows' shapes against.
      if (process.env.RECORD_HISTORIES) {
        await saveHistory(env, sessionWorkflowId(sampleIdOf(session)), 'session-workflow-feedback');
        await saveHistory(env, trainingWorkflowId(config.runId), 'training-workflow-feedback-amended');
        const amended = trained.find((id) => id.startsWith(sampleIdOf(t1.turnId))) ?? '';
        await saveHistory(env, scoreTurnWorkflowId(amended), 'score-turn-workflow-feedback-amendment');
      }
    } finally {
      await stack.close();
    }
  }, 240_000);

  it('combine: a correction is the teacher hint (opd+rl, reward -1), and another correction gives another teacher signal', async () => {
    // Two users get the same reply and correct it differently: each turn must distil from its own correction.
    const config = configFor('combine', 2);
    const stack = await startControlStack(config, env);
    try {
      const question: ChatCompletionMessageParam[] = [
        { role: 'user', content: 'What is the capital of France?' },
      ];
      const a = await chat(stack, 'fix-a', question);
      const b = await chat(stack, 'fix-b', question);
      const corrections = { a: 'The answer is Paris.', b: 'Answer in one word, in capitals: PARIS' };
      expect(
        (await feedback(stack.gateway.url, { turn_id: a.turnId, correction: corrections.a })).status,
      ).toBe(200);
      expect(
        (await feedback(stack.gateway.url, { turn_id: b.turnId, correction: corrections.b })).status,
      ).toBe(200);

      await untilTrainingStatus(env.client, config.runId, (s) => s.policyVersion >= 1);
      const [sa, sb] = await Promise.all(
        [a, b].map((t) =>
          stack.store.get<Stored<TrainingSample & { judge: { hint: string } }>>(
            sampleKey(sampleIdOf(t.turnId)),
          ),
        ),
      );
      expect(sa).toMatchObject({ kind: 'opd+rl', reward: -1 });
      expect(sb).toMatchObject({ kind: 'opd+rl', reward: -1 });
      expect(sa?.judge.hint).toBe(corrections.a);
      expect(sb?.judge.hint).toBe(corrections.b);
      // The same reply tokens, two teacher prompts: two teacher signals.
      expect(sa?.tokens).toEqual(sb?.tokens);
      const [ta, tb] = await Promise.all(
        [a, b].map((t) =>
          stack.store.get<{ logProbs: number[]; promptIds: number[] }>(teacherKey(sampleIdOf(t.turnId))),
        ),
      );
      expect(ta?.promptIds).not.toEqual(tb?.promptIds);
      expect(ta?.logProbs).toEqual(sa?.teacherLogProbs);
      expect(tb?.logProbs).toEqual(sb?.teacherLogProbs);
      expect(sa?.teacherLogProbs).not.toEqual(sb?.teacherLogProbs);

      // After scoring: a turn settled without a next state (the session ended) trains once it is corrected.
      const c = await chat(stack, 'fix-c', question, { done: true });
      await untilTrainingStatus(env.client, config.runId, (s) => s.exclusionsByReason['no-next-state'] === 1);
      await feedback(stack.gateway.url, { turn_id: c.turnId, rating: 0.5, correction: corrections.a });
      const d = await chat(stack, 'fix-d', question);
      await feedback(stack.gateway.url, { turn_id: d.turnId, rating: 1 });
      await untilTrainingStatus(env.client, config.runId, (s) => s.policyVersion >= 2);
      const entry = await lineageAt(config.runId, 2);
      const later = entry?.sampleIds.find((id) => id.startsWith(`${sampleIdOf(c.turnId)}~fb-`)) ?? '';
      expect(await stack.store.get(sampleKey(later))).toMatchObject({ kind: 'opd+rl', reward: 0.5 });
      // A rating alone on an open turn: combine trains it as rl, without a teacher.
      expect(await stack.store.get(sampleKey(sampleIdOf(d.turnId)))).toMatchObject({ kind: 'rl', reward: 1 });
      // Its next state still reaches the hint judge, which combine uses: the turn is scored again with it.
      await chat(stack, 'fix-d', [...question, d.reply, { role: 'user', content: 'and Germany?' }]);
      const rescored = env.client.workflow.getHandle(`${scoreTurnWorkflowId(sampleIdOf(d.turnId))}~next`);
      await waitFor(
        async () => (await rescored.describe().catch(() => null))?.status.name === 'COMPLETED',
        60_000,
        'the scoring with the next state',
      );
    } finally {
      await stack.close();
    }
  }, 240_000);

  it('opd: a correction before or after scoring makes the turn train; a rating alone gives opd no hint', async () => {
    // A user corrects one reply at once, and another after ending its session: opd must distil from both.
    const config = configFor('opd', 2);
    const stack = await startControlStack(config, env);
    try {
      const turn = await chat(stack, 'opd-late', [{ role: 'user', content: 'Pick a number.' }], {
        done: true,
      });
      await untilTrainingStatus(env.client, config.runId, (s) => s.samplesExcluded >= 1);
      const rated = await chat(stack, 'opd-rated', [{ role: 'user', content: 'Pick a letter.' }]);
      await feedback(stack.gateway.url, { turn_id: rated.turnId, rating: 1 });
      await feedback(stack.gateway.url, { turn_id: turn.turnId, correction: 'Seven, and say why.' });
      const now = await chat(stack, 'opd-now', [{ role: 'user', content: 'Pick a colour.' }]);
      await feedback(stack.gateway.url, { turn_id: now.turnId, correction: 'Blue, and say why.' });
      const status = await untilTrainingStatus(env.client, config.runId, (s) => s.policyVersion >= 1);
      expect(status.exclusionsByReason['no-hint']).toBe(1);
      const entry = await lineageAt(config.runId, 1);
      const trained = [...(entry?.sampleIds ?? [])].sort();
      expect(trained).toHaveLength(2);
      expect(trained[0]).toMatch(new RegExp(`^${sampleIdOf(turn.turnId)}~fb-[0-9a-f]{16}$`));
      expect(trained[1]).toBe(sampleIdOf(now.turnId));
      for (const id of trained)
        expect((await stack.store.get<TrainingSample>(sampleKey(id)))?.kind).toBe('opd');
    } finally {
      await stack.close();
    }
  }, 240_000);

  it('bad input gets a clear 4xx and changes nothing; another tenant cannot reach a turn', async () => {
    // A client sends malformed or foreign feedback: it is refused with OpenAI error JSON and nothing is stored.
    const config = configFor('rl', 8, { gateway: { port: 0, apiKeys: ['key-alice', 'key-bob'] } });
    const stack = await startControlStack(config, env);
    try {
      const openai = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: 'key-alice', maxRetries: 0 });
      const response = (await openai.chat.completions.create(
        { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 },
        { headers: { 'X-Session-Id': 'alice-chat' } },
      )) as Completion;
      const turnId = String(response.turn_id);
      const url = stack.gateway.url;
      const cases: [unknown, number, string][] = [
        [{ turn_id: turnId, rating: 2 }, 400, 'rating'],
        [{ turn_id: turnId, rating: -1.5 }, 400, 'rating'],
        [{ turn_id: turnId }, 400, 'rating'],
        [{ turn_id: turnId, session_id: 'alice-chat', rating: 1 }, 400, 'turn_id'],
        [{ session_id: 'alice-chat', correction: '' }, 400, 'correction'],
        [{ session_id: 'alice-chat', scope: 'session', correction: 'x' }, 400, 'correction'],
        [{ turn_id: turnId, rating: 1, stars: 5 }, 400, 'stars'],
        [{ turn_id: 'alice-chat:9-0123456789abcdef', rating: 1 }, 404, 'no turn'],
        [{ session_id: 'alice-chat', position: 9, rating: 1 }, 404, 'position 9'],
        [{ session_id: 'nobody', rating: 1 }, 404, 'nobody'],
      ];
      for (const [body, status, says] of cases) {
        const answer = await feedback(url, body, 'key-alice');
        expect(answer.status, JSON.stringify(body)).toBe(status);
        expect(answer.body.error?.message).toContain(says);
      }
      // A rating on the whole session reaches each of its turns.
      const second = (await openai.chat.completions.create(
        {
          model: 'tiny',
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: response.choices[0]?.message.content ?? '' },
            { role: 'user', content: 'more' },
          ],
          max_tokens: 4,
        },
        { headers: { 'X-Session-Id': 'alice-chat' } },
      )) as Completion;
      const whole = await feedback(
        url,
        { session_id: 'alice-chat', scope: 'session', rating: 1 },
        'key-alice',
      );
      expect(whole.status).toBe(200);
      expect(whole.body).toMatchObject({ object: 'list', session_id: 'alice-chat' });
      expect((whole.body.data as { turn_id: string }[]).map((f) => f.turn_id)).toEqual([
        turnId,
        second.turn_id,
      ]);
      // bob knows alice's turn id and session id: not found for him.
      expect((await feedback(url, { turn_id: turnId, rating: -1 }, 'key-bob')).status).toBe(404);
      expect((await feedback(url, { session_id: 'alice-chat', rating: -1 }, 'key-bob')).status).toBe(404);
      expect((await feedback(url, { turn_id: turnId, rating: -1 })).status).toBe(401);
      // alice's own feedback is taken, as new: bob's identical request stored nothing under her turn.
      const taken = await feedback(url, { turn_id: turnId, rating: -1 }, 'key-alice');
      expect(taken.status).toBe(200);
      expect(taken.body.created).toBe(true);
      const handle = env.client.workflow.getHandle(
        sessionWorkflowId(scopedSessionId(apiKeyName('key-alice'), 'alice-chat')),
      );
      await waitFor(
        async () => (await handle.query(sessionStatusQuery).catch(() => null))?.feedbackReceived === 3,
        30_000,
        'delivery',
      );
    } finally {
      await stack.close();
    }
  }, 240_000);

  it('feedback sent while Temporal is down is accepted at once and trains once Temporal is back', async () => {
    // The user rates a reply while the Temporal server is unreachable: the gateway must take it and deliver later.
    const config = configFor('rl', 1);
    const down = await startGateway(
      { ...config, gateway: { ...config.gateway, port: await freePort() } },
      { temporalAddress: `127.0.0.1:${await freePort()}`, logger: false },
    );
    let turnId: string;
    try {
      const openai = new OpenAI({ baseURL: `${down.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const response = (await openai.chat.completions.create(
        { model: 'tiny', messages: [{ role: 'user', content: 'Temporal is down.' }], max_tokens: 4 },
        { headers: { 'X-Session-Id': 'outage' } },
      )) as Completion;
      turnId = String(response.turn_id);
      const answer = await feedback(down.url, { turn_id: turnId, rating: -1 });
      expect(answer.status).toBe(200);
      // The turn and the feedback wait in the outbox.
      const metrics = await (await fetch(`${down.url}/metrics`)).text();
      expect(metrics).toMatch(/^openclaw_outbox_depth 2$/m);
    } finally {
      await down.close();
    }
    // Temporal is back: a gateway (and the control worker) on the same store deliver the turn, then the feedback.
    const stack = await startControlStack(config, env);
    try {
      await untilTrainingStatus(env.client, config.runId, (s) => s.policyVersion >= 1, 120_000);
      const sample = await stack.store.get<TrainingSample>(sampleKey(sampleIdOf(turnId)));
      expect(sample).toMatchObject({ kind: 'rl', reward: -1 });
    } finally {
      await stack.close();
    }
  }, 300_000);
});
