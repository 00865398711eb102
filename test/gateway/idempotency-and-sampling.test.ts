// Retries and what is recorded of them, through the gateway in front of a real reference engine and the run's
// real Temporal server: an `Idempotency-Key` retry is the first response again, byte for byte (streams too),
// and the engine is not asked twice; a key is scoped by API key, refuses a different request, is busy while
// its first attempt runs, is freed by a failure and forgotten after its time. Every main turn records the
// sampling parameters the engine used (all sent explicitly) and its chat_template_kwargs.

import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../core/chat-messages.js';
import { scopedSessionId } from '../../core/tenant.js';
import type { EngineProcess } from '../../engines/reference-engine-process.js';
import { apiKeyName } from '../../gateway/auth.js';
import { type CountingProxy, startCountingProxy } from '../support/counting-proxy.js';
import { CountingStore } from '../support/counting-store.js';
import { startDelayingProxy } from '../support/delaying-proxy.js';
import { findRecordedTurn, recordedTurns } from '../support/turn-lookup.js';
import {
  type EngineStack,
  sessionSignals,
  startEngineStack,
  startTestGateway,
  type TestGateway,
} from './gateway-fixture.js';

const KEYS = ['key-one', 'key-two'];
const CHAT = '/v1/chat/completions';

describe('Idempotency-Key and recorded sampling, against a real engine and Temporal', () => {
  let stack: EngineStack;
  let engine: EngineProcess;
  let proxy: CountingProxy;
  let env: TestWorkflowEnvironment;
  let gateway: TestGateway;
  const gateways: TestGateway[] = [];
  // A bare key is a tenant of its own, named after the key.
  const tenants = KEYS.map(apiKeyName);
  const mine = (id: string) => scopedSessionId(tenants[0] ?? '', id);
  const session = (label: string) => {
    const id = stack.session(label, tenants[0]);
    stack.sessions.add(scopedSessionId(tenants[1] ?? '', id));
    return id;
  };

  beforeAll(async () => {
    stack = await startEngineStack('idempotency');
    ({ engine, env } = stack);
    proxy = await startCountingProxy(engine.url);
    gateway = await startTestGateway({
      engineUrl: proxy.url,
      client: env.client,
      apiKeys: KEYS,
      store: new CountingStore(join(stack.dir, 'store')),
    });
    gateways.push(gateway);
  }, 180_000);

  afterAll(async () => {
    for (const started of gateways) await started.close();
    await proxy?.close();
    await stack?.close();
  });

  async function post(
    target: TestGateway,
    body: Record<string, unknown>,
    headers: Record<string, string>,
    apiKey = KEYS[0],
  ): Promise<{ status: number; text: string; headers: Headers }> {
    const response = await fetch(`${target.url}${CHAT}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}`, ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  const question = (text: string): ChatMessage[] => [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: text },
  ];

  for (const stream of [false, true]) {
    it(`replays ${stream ? 'a stream' : 'a response'} byte for byte without asking the engine again`, async () => {
      const sessionId = session(stream ? 'idem-stream' : 'idem-plain');
      // No seed: a second generation would differ.
      const body = {
        model: 'tiny',
        messages: question('Say a few words.'),
        max_tokens: 12,
        ignore_eos: true,
        stream,
      };
      const headers = { 'X-Session-Id': sessionId, 'Idempotency-Key': `retry-${sessionId}` };
      const first = await post(gateway, body, headers);
      expect(first.status).toBe(200);
      if (stream) expect(first.text.endsWith('data: [DONE]\n\n')).toBe(true);
      const asked = proxy.count(CHAT);

      const retry = await post(gateway, body, headers);
      expect(retry.status).toBe(200);
      expect(retry.text).toBe(first.text);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.headers.get('content-type')).toBe(first.headers.get('content-type'));
      expect(proxy.count(CHAT)).toBe(asked);
      expect(await recordedTurns(gateway.store, mine(sessionId))).toHaveLength(1);
      await gateway.delivered();
      expect(
        (await sessionSignals(env.client, mine(sessionId))).filter((s) => s.name === 'turnRecorded'),
      ).toHaveLength(1);

      // Another API key has keys of its own: the same key there is a new request, answered afresh.
      const elsewhere = await post(gateway, body, headers, KEYS[1]);
      expect(elsewhere.status).toBe(200);
      expect(elsewhere.headers.get('idempotent-replayed')).toBeNull();
      expect(elsewhere.text).not.toBe(first.text);
      expect(proxy.count(CHAT)).toBe(asked + 1);
    });
  }

  it('answers a stalled attempt and two racing retries of one key with one generation and one reply', async () => {
    // The first attempt stalls past its lease (its gateway's clock runs behind: its lease is over as soon as it
    // is written) while two retries race for the key: before, the stalled attempt's late answer was stored over
    // the retry's, and the clients of one key were given two different replies.
    const delaying = await startDelayingProxy(proxy.url);
    delaying.delays.set(CHAT, 2_000);
    const stalledGateway = await startTestGateway({
      engineUrl: delaying.url,
      client: env.client,
      apiKeys: KEYS,
      store: gateway.store,
      idempotencyClock: () => Date.now() - 600_000,
    });
    gateways.push(stalledGateway);
    try {
      const sessionId = session('idem-takeover');
      const body = { model: 'tiny', messages: question('Name a colour.'), max_tokens: 8, ignore_eos: true };
      const headers = { 'X-Session-Id': sessionId, 'Idempotency-Key': `takeover-${sessionId}` };
      const asked = proxy.count(CHAT);
      const first = post(stalledGateway, body, headers);
      await expect.poll(() => proxy.count(CHAT), { timeout: 10_000, interval: 20 }).toBe(asked + 1);
      const retries = await Promise.all([post(gateway, body, headers), post(gateway, body, headers)]);
      const stalled = await first;
      const again = await post(gateway, body, headers);

      // The stalled attempt and exactly one of the retries reached the engine.
      expect(proxy.count(CHAT)).toBe(asked + 2);
      const answered = [...retries, again].filter((r) => r.status === 200);
      expect(answered.length).toBeGreaterThanOrEqual(2);
      expect(new Set(answered.map((r) => r.text)).size).toBe(1);
      for (const busy of retries.filter((r) => r.status !== 200)) {
        expect(busy.status).toBe(409);
        expect(JSON.parse(busy.text)).toMatchObject({ error: { code: 'idempotency_key_in_use' } });
      }
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      // The stalled attempt's client is told to retry, which gets the reply that was kept.
      expect(stalled.status).toBe(409);
      expect(JSON.parse(stalled.text)).toMatchObject({ error: { code: 'idempotency_key_taken_over' } });
    } finally {
      await delaying.close();
    }
  });

  it('refuses a key reused for a different request (422) or while its first attempt runs (409)', async () => {
    const sessionId = session('idem-conflict');
    const key = { 'X-Session-Id': sessionId, 'Idempotency-Key': `conflict-${sessionId}` };
    const body = {
      model: 'tiny',
      messages: question('An answer.'),
      max_tokens: 8,
      ignore_eos: true,
      stream: true,
    };
    // The first attempt is certainly in flight: the engine has it, and its answer is held back.
    const asked = proxy.count(CHAT);
    const release = proxy.hold();
    const first = post(gateway, body, key);
    await expect.poll(() => proxy.count(CHAT), { timeout: 10_000, interval: 20 }).toBe(asked + 1);

    const busy = await post(gateway, body, key);
    expect(busy.status).toBe(409);
    expect(busy.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(busy.text)).toMatchObject({
      error: { code: 'idempotency_key_in_use', param: 'Idempotency-Key', type: 'invalid_request_error' },
    });
    const different = await post(gateway, { ...body, max_tokens: 5 }, key);
    expect(different.status).toBe(422);
    expect(JSON.parse(different.text)).toMatchObject({ error: { code: 'idempotency_key_reused' } });

    release();
    const answered = await first;
    expect(answered.status).toBe(200);
    const replay = await post(gateway, body, key);
    expect(replay.text).toBe(answered.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(proxy.count(CHAT)).toBe(asked + 1);
  });

  it('frees the key of a request that failed, forgets a key after its time, and refuses a malformed one', async () => {
    const sessionId = session('idem-free');
    const refused = { model: 'tiny', messages: question('hi'), max_tokens: 2, frequency_penalty: 0.5 };
    const headers = { 'X-Session-Id': sessionId, 'Idempotency-Key': `free-${sessionId}` };
    const asked = proxy.count(CHAT);
    expect((await post(gateway, refused, headers)).status).toBe(400);
    // Not 409 nor a replay: the engine is asked again.
    expect((await post(gateway, refused, headers)).status).toBe(400);
    expect(proxy.count(CHAT)).toBe(asked + 2);

    const shortLived = await startTestGateway({
      engineUrl: proxy.url,
      client: env.client,
      apiKeys: KEYS,
      store: gateway.store,
      idempotencyTtlMs: 1_000,
    });
    gateways.push(shortLived);
    const expiring = { 'X-Session-Id': sessionId, 'Idempotency-Key': `expiring-${sessionId}` };
    const ask = (text: string) => ({ model: 'tiny', messages: question(text), max_tokens: 2 });
    expect((await post(shortLived, ask('one'), expiring)).status).toBe(200);
    expect((await post(shortLived, ask('two'), expiring)).status).toBe(422);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await post(shortLived, ask('two'), expiring)).status).toBe(200);

    const malformed = await post(gateway, ask('x'), { 'Idempotency-Key': 'é'.repeat(3) });
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.text)).toMatchObject({
      error: { param: 'Idempotency-Key', code: 'invalid_idempotency_key' },
    });
  });

  it('sends and records every sampling parameter and the chat_template_kwargs of a main turn', async () => {
    const tuned = await startTestGateway({
      engineUrl: proxy.url,
      client: env.client,
      apiKeys: KEYS,
      sampling: { temperature: 0.7, topP: 0.9, topK: 5, minP: 0 },
    });
    gateways.push(tuned);
    const sessionId = session('sampling');
    const messages = question('Pick a word.');
    const kwargs = { enable_thinking: false };
    const reply = await post(
      tuned,
      { model: 'tiny', messages, max_tokens: 6, seed: 3, ignore_eos: true, chat_template_kwargs: kwargs },
      { 'X-Session-Id': sessionId },
    );
    expect(reply.status).toBe(200);
    const recorded = await findRecordedTurn(tuned.store, mine(sessionId), 1);
    expect(recorded?.sampling).toEqual({
      temperature: 0.7,
      topP: 0.9,
      topK: 5,
      minP: null,
      maxTokens: 6,
      seed: 3,
      constraints: [],
    });
    expect(recorded?.chatTemplateKwargs).toEqual(kwargs);

    // The engine sampled at exactly those values: asked directly with them it gives the same tokens and
    // log-probs; at its own neutral defaults it does not.
    const direct = async (sampling: Record<string, number>) => {
      const response = await fetch(`${engine.url}${CHAT}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'tiny',
          messages,
          max_tokens: 6,
          seed: 3,
          ignore_eos: true,
          chat_template_kwargs: kwargs,
          logprobs: true,
          return_token_ids: true,
          ...sampling,
        }),
      });
      // The engine runs strict (as SGLang 0.5.23): the sampled ids are `response_token_ids`.
      const choice = (
        (await response.json()) as {
          choices: { response_token_ids: number[]; logprobs: { content: { logprob: number }[] } }[];
        }
      ).choices[0];
      return { ids: choice?.response_token_ids, logprobs: choice?.logprobs.content.map((c) => c.logprob) };
    };
    const same = await direct({ temperature: 0.7, top_p: 0.9, top_k: 5, min_p: 0 });
    expect(same.ids).toEqual(recorded?.responseIds);
    same.logprobs?.forEach((lp, i) => {
      expect(lp).toBeCloseTo(recorded?.responseLogProbs[i] ?? Number.NaN, 5);
    });
    const neutral = await direct({});
    expect(neutral.logprobs).not.toEqual(same.logprobs);
  });
});
