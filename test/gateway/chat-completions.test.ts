// The gateway in front of a real reference engine, recording into a real FileSampleStore and handing turns
// to the run's real Temporal server, driven by the `openai` client as any user's agent would.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { APIError } from 'openai';
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveSessionId } from '../../core/session-id.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import { sessionTurnsPrefix } from '../../core/turn-record.js';
import type { TurnRef } from '../../core/types.js';
import type { EngineProcess } from '../../engines/reference-engine-process.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { findRecordedTurn, recordedTurns } from '../support/turn-lookup.js';
import {
  type EngineStack,
  sessionSignals,
  sessionStartInput,
  startEngineStack,
  startTestGateway,
  TEST_SESSION_SETTINGS,
  type TestGateway,
} from './gateway-fixture.js';

type Completion = ChatCompletion & { session_id?: string };
type EngineChoice = {
  token_ids: number[];
  prompt_token_ids: number[];
  logprobs: { content: { logprob: number }[] };
};

const MODEL = 'tiny';

/** A request body for the openai client; extra engine fields (ignore_eos, return_token_ids) pass through. */
const plain = (body: Record<string, unknown>) =>
  ({ model: MODEL, ...body }) as unknown as ChatCompletionCreateParamsNonStreaming;
const streaming = (body: Record<string, unknown>) =>
  ({ model: MODEL, ...body, stream: true }) as unknown as ChatCompletionCreateParamsStreaming;

const WEATHER_TOOL: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('gateway chat completions against a real engine and Temporal', () => {
  let stack: EngineStack;
  let dir: string;
  let engine: EngineProcess;
  let env: TestWorkflowEnvironment;
  let gateway: TestGateway;
  const session = (label: string) => stack.session(label);
  /** The id the gateway records for a client's id: an open gateway's tenant is `local`. */
  const local = (id: string) => scopedSessionId(LOCAL_TENANT, id);

  beforeAll(async () => {
    stack = await startEngineStack('gateway-engine');
    ({ dir, engine, env } = stack);
    gateway = await startTestGateway({ engineUrl: engine.url, client: env.client });
  }, 180_000);

  afterAll(async () => {
    await gateway?.close();
    await stack?.close();
  });

  const record = (sessionId: string, turn: number) => findRecordedTurn(gateway.store, local(sessionId), turn);
  const recordsOf = (sessionId: string) => gateway.store.list(sessionTurnsPrefix(local(sessionId)));

  /** The same request straight to the engine, with its exact-token extensions. */
  async function engineDirect(body: Record<string, unknown>): Promise<EngineChoice> {
    const response = await fetch(`${engine.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        ...body,
        logprobs: true,
        return_prompt_token_ids: true,
        return_token_ids: true,
      }),
    });
    expect(response.status).toBe(200);
    // The engine runs strict (as SGLang 0.5.23): the sampled ids are `response_token_ids`.
    const json = (await response.json()) as { choices: (EngineChoice & { response_token_ids: number[] })[] };
    const choice = json.choices[0];
    if (!choice) throw new Error('engine returned no choice');
    return { ...choice, token_ids: choice.response_token_ids };
  }

  async function turnRefs(sessionId: string): Promise<TurnRef[]> {
    await gateway.delivered();
    const signals = await sessionSignals(env.client, local(sessionId));
    return signals.filter((s) => s.name === 'turnRecorded').map((s) => s.args[0] as TurnRef);
  }

  it('records a non-streaming main turn with exactly the engine tokens before answering', async () => {
    const sessionId = session('plain');
    const body = {
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say something.' },
      ] satisfies ChatCompletionMessageParam[],
      max_tokens: 8,
      seed: 7,
      ignore_eos: true,
    };
    const completion = (await gateway.openai().chat.completions.create(plain(body), {
      headers: { 'X-Session-Id': sessionId },
    })) as Completion;

    expect(completion.session_id).toBe(sessionId);
    const choice = completion.choices[0];
    expect(choice?.message.role).toBe('assistant');
    // The client did not ask for log-probs or token ids, so it sees none.
    expect(choice?.logprobs ?? null).toBeNull();
    expect(choice).not.toHaveProperty('token_ids');
    expect(choice).not.toHaveProperty('prompt_token_ids');

    // Durable before the response: the record and its outbox entry are there the moment the call returns
    // (the entry may already be delivered and gone).
    const recorded = await record(sessionId, 1);
    const direct = await engineDirect(body);
    expect(recorded).toMatchObject({
      sessionId: local(sessionId),
      turn: 1,
      continues: null,
      policyVersion: 0,
      // Every sampling parameter the engine used, explicit in what the gateway sent.
      sampling: { temperature: 1, topP: 1, topK: null, minP: null, maxTokens: 8, seed: 7 },
      chatTemplateKwargs: null,
      finishReason: 'length',
      tools: null,
      promptIds: direct.prompt_token_ids,
      responseIds: direct.token_ids,
      response: { content: choice?.message.content },
    });
    expect(recorded?.responseIds).toHaveLength(8);
    expect(recorded?.responseLogProbs).toHaveLength(8);
    recorded?.responseLogProbs.forEach((lp, i) => {
      expect(lp).toBeCloseTo(direct.logprobs.content[i]?.logprob ?? Number.NaN, 5);
    });
    expect(recorded?.messages).toEqual(body.messages);
    expect(recorded?.prefixHash).toMatch(/^[0-9a-f]{64}$/);
    expect(recorded?.sampleId).toMatch(new RegExp(`^${local(sessionId)}:1-[0-9a-f]{16}$`));

    expect(await turnRefs(sessionId)).toEqual([
      {
        sessionId: local(sessionId),
        turn: 1,
        sampleId: recorded?.sampleId,
        policyVersion: 0,
        kind: 'main',
        prefixHash: recorded?.prefixHash,
        recordedAt: recorded?.recordedAt,
        continues: null,
      },
    ]);
    expect(await sessionStartInput(env.client, local(sessionId))).toEqual({
      sessionId: local(sessionId),
      ...TEST_SESSION_SETTINGS,
    });
  });

  it('relays a stream incrementally and records it before [DONE]', async () => {
    const sessionId = session('stream');
    const body = {
      messages: [{ role: 'user', content: 'Stream a few words.' }] satisfies ChatCompletionMessageParam[],
      max_tokens: 24,
      seed: 11,
      ignore_eos: true,
      stream: true,
    };
    const stream = await gateway.openai().chat.completions.create(streaming(body), {
      headers: { 'X-Session-Id': sessionId },
    });
    const arrivals: number[] = [];
    let content = '';
    let finishReason: string | null = null;
    let chunkCount = 0;
    let turnId: string | undefined;
    for await (const chunk of stream) {
      chunkCount++;
      expect((chunk as { session_id?: string }).session_id).toBe(sessionId);
      expect(chunk).not.toHaveProperty('usage');
      // The recorded turn's id comes last, on a chunk without choices.
      expect(turnId).toBeUndefined();
      turnId = (chunk as { turn_id?: string }).turn_id;
      if (turnId !== undefined) {
        expect(chunk.choices).toEqual([]);
        continue;
      }
      const choice = chunk.choices[0];
      expect(choice).not.toHaveProperty('token_ids');
      expect(choice?.logprobs ?? null).toBeNull();
      if (choice?.delta.content) {
        content += choice.delta.content;
        arrivals.push(performance.now());
      }
      finishReason = choice?.finish_reason ?? finishReason;
    }
    // One chunk per released piece of text, as the engine produced them, not one faked at the end.
    expect(arrivals.length).toBeGreaterThanOrEqual(4);
    expect(chunkCount).toBeGreaterThan(arrivals.length);
    expect((arrivals.at(-1) ?? 0) - (arrivals[0] ?? 0)).toBeGreaterThan(0);
    expect(finishReason).toBe('length');

    const recorded = await record(sessionId, 1);
    expect(turnId).toBe(recorded?.sampleId.split('/').slice(1).join('/'));
    const direct = await engineDirect({ ...body, stream: false });
    expect(recorded?.response.content).toBe(content);
    expect(recorded?.promptIds).toEqual(direct.prompt_token_ids);
    expect(recorded?.responseIds).toEqual(direct.token_ids);
    expect(recorded?.responseLogProbs).toHaveLength(24);
    recorded?.responseLogProbs.forEach((lp, i) => {
      expect(lp).toBeCloseTo(direct.logprobs.content[i]?.logprob ?? Number.NaN, 5);
    });
    expect(await turnRefs(sessionId)).toHaveLength(1);
  });

  it('passes token ids and log-probs to a client that asks, identical to what it records', async () => {
    const sessionId = session('asks');
    const stream = await gateway.openai().chat.completions.create(
      streaming({
        messages: [{ role: 'user', content: 'Tokens please.' }],
        max_tokens: 6,
        seed: 3,
        ignore_eos: true,
        stream: true,
        logprobs: true,
        return_token_ids: true,
        stream_options: { include_usage: true },
      }),
      { headers: { 'X-Session-Id': sessionId } },
    );
    const ids: number[] = [];
    const logprobs: number[] = [];
    let usage: unknown = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0] as (typeof chunk.choices)[number] & { token_ids?: number[] };
      ids.push(...(choice?.token_ids ?? []));
      logprobs.push(...(choice?.logprobs?.content ?? []).map((item) => item.logprob));
      if (chunk.usage) usage = chunk.usage;
    }
    expect(usage).toMatchObject({ completion_tokens: 6 });
    const recorded = await record(sessionId, 1);
    expect(recorded?.responseIds).toEqual(ids);
    expect(recorded?.responseLogProbs).toEqual(logprobs);
  });

  it('forwards tools and records the tool result as the next turn', async () => {
    const sessionId = session('tools');
    const opening: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'Use tools when useful.' },
      { role: 'user', content: 'Weather in Paris?' },
    ];
    await gateway
      .openai()
      .chat.completions.create(plain({ messages: opening, tools: [WEATHER_TOOL], max_tokens: 4, seed: 1 }), {
        headers: { 'X-Session-Id': sessionId },
      });
    const first = await record(sessionId, 1);
    expect(first?.tools).toEqual([WEATHER_TOOL]);
    // The prompt the engine sampled from is the one with the tools rendered in.
    const withTools = await tokenize({ messages: opening, tools: [WEATHER_TOOL] });
    const withoutTools = await tokenize({ messages: opening });
    expect(first?.promptIds).toEqual(withTools);
    expect(first?.promptIds).not.toEqual(withoutTools);

    const toolLoop: ChatCompletionMessageParam[] = [
      ...opening,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '22 C and sunny' },
    ];
    const completion = (await gateway
      .openai()
      .chat.completions.create(plain({ messages: toolLoop, tools: [WEATHER_TOOL], max_tokens: 4, seed: 2 }), {
        headers: { 'X-Session-Id': sessionId },
      })) as Completion;
    expect(completion.choices[0]?.message.role).toBe('assistant');
    const second = await record(sessionId, 2);
    expect(second?.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_1',
      content: '22 C and sunny',
    });
    expect(second?.messages.at(-2)?.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    expect(second?.promptIds).toEqual(await tokenize({ messages: toolLoop, tools: [WEATHER_TOOL] }));
    expect((await turnRefs(sessionId)).map((ref) => ref.turn)).toEqual([1, 2]);
  });

  async function tokenize(body: Record<string, unknown>): Promise<number[]> {
    const response = await fetch(`${engine.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, add_generation_prompt: true }),
    });
    return ((await response.json()) as { tokens: number[] }).tokens;
  }

  it('finds the session in the header, the body, the user field, or derives it', async () => {
    const client = gateway.openai();
    const ask = async (extra: Record<string, unknown>, headers: Record<string, string> = {}) =>
      (await client.chat.completions.create(
        plain({ messages: [{ role: 'user', content: `hello ${Math.random()}` }], max_tokens: 2, ...extra }),
        { headers },
      )) as Completion;

    const fromHeader = session('hdr');
    const fromBody = session('body');
    const fromUser = session('user');
    expect(
      (await ask({ session_id: 'ignored-because-header' }, { 'X-Session-Id': fromHeader })).session_id,
    ).toBe(fromHeader);
    expect((await ask({ session_id: fromBody })).session_id).toBe(fromBody);
    expect((await ask({ user: fromUser })).session_id).toBe(fromUser);
    for (const id of [fromHeader, fromBody, fromUser]) expect(await recordsOf(id)).toHaveLength(1);

    const messages = [{ role: 'user' as const, content: `an unpatched client ${Math.random()}` }];
    const derived = (await client.chat.completions.create(plain({ messages, max_tokens: 2 }))) as Completion;
    // Derived from the first user message, the same for every reply.
    const reply = { content: derived.choices[0]?.message.content ?? null, toolCalls: null };
    const expected = scopedSessionId(
      LOCAL_TENANT,
      deriveSessionId(LOCAL_TENANT, `user:${messages[0]?.content}`),
    );
    stack.sessions.add(expected);
    expect(local(derived.session_id ?? '')).toBe(expected);
    expect(await recordsOf(derived.session_id ?? '')).toHaveLength(1);
    expect(await turnRefs(derived.session_id ?? '')).toHaveLength(1);
    // The next request of that conversation carries the reply: the same session.
    await client.chat.completions.create(
      plain({
        messages: [
          ...messages,
          { role: 'assistant', content: reply.content },
          { role: 'user', content: 'and?' },
        ],
        max_tokens: 2,
      }),
    );
    expect(await recordsOf(derived.session_id ?? '')).toHaveLength(2);
  });

  it('serves side turns without recording them', async () => {
    const sessionId = session('side');
    for (const stream of [false, true]) {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'X-Session-Id': sessionId, 'X-Turn-Type': 'side' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'heartbeat' }], max_tokens: 3, stream }),
      });
      expect(response.status).toBe(200);
      const text = await response.text();
      if (stream) expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      else expect(JSON.parse(text)).toMatchObject({ session_id: sessionId, object: 'chat.completion' });
    }
    expect(await recordsOf(sessionId)).toEqual([]);
    await gateway.delivered();
    expect(await sessionSignals(env.client, local(sessionId))).toEqual([]);
  });

  it('records a retry as its own turn unless it got the very same answer', async () => {
    const sessionId = session('retry');
    const messages = [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'second' },
    ];
    const headers = { 'X-Session-Id': sessionId };
    // With a seed, the retry gets the same tokens: the same turn, recorded once, its signal sent again.
    const seeded = plain({ messages, max_tokens: 3, seed: 5 });
    await gateway.openai().chat.completions.create(seeded, { headers });
    await gateway.openai().chat.completions.create(seeded, { headers });
    expect(await recordsOf(sessionId)).toHaveLength(1);
    const refs = await turnRefs(sessionId);
    expect(refs.map((ref) => ref.sampleId)).toEqual([refs[0]?.sampleId, refs[0]?.sampleId]);

    // Without one, the retry is answered afresh: a sibling (same prefix), recorded as its own turn.
    const unseeded = plain({ messages, max_tokens: 8, ignore_eos: true });
    const a = await gateway.openai().chat.completions.create(unseeded, { headers });
    const b = await gateway.openai().chat.completions.create(unseeded, { headers });
    expect(a.choices[0]?.message.content).not.toBe(b.choices[0]?.message.content);
    const turns = await recordedTurns(gateway.store, local(sessionId));
    expect(turns).toHaveLength(3);
    expect(new Set(turns.map((t) => t.prefixHash)).size).toBe(1);
    expect(turns.slice(1).map((t) => t.response.content)).toEqual([
      a.choices[0]?.message.content,
      b.choices[0]?.message.content,
    ]);
    // "ok" was never a reply of this gateway: the requests continue no recorded turn.
    expect(turns.every((t) => t.continues === null && t.turn === 2)).toBe(true);
    expect((await turnRefs(sessionId)).map((ref) => ref.sampleId).slice(2)).toEqual(
      turns.slice(1).map((t) => t.sampleId),
    );
  });

  it('ends a session on X-Session-Done after recording its last turn', async () => {
    const sessionId = session('done');
    await gateway
      .openai()
      .chat.completions.create(streaming({ messages: [{ role: 'user', content: 'bye' }], max_tokens: 2 }), {
        headers: { 'X-Session-Id': sessionId, 'X-Session-Done': 'true' },
      })
      .then(async (stream) => {
        for await (const _ of stream) {
          // drain
        }
      });
    await gateway.delivered();
    const signals = await sessionSignals(env.client, local(sessionId));
    expect(signals.map((s) => s.name)).toEqual(['turnRecorded', 'sessionDone']);
  });

  it('aborts the engine and records nothing when the client disconnects', async () => {
    const sessionId = session('gone');
    const long = {
      messages: [{ role: 'user', content: 'a very long answer please' }],
      max_tokens: 3000,
      ignore_eos: true,
    };
    const stream = await gateway
      .openai()
      .chat.completions.create(streaming(long), { headers: { 'X-Session-Id': sessionId } });
    let seen = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) seen++;
      if (seen < 2) continue;
      expect(await activeEngineRequests()).toBe(1);
      break; // leaving the loop aborts the HTTP request
    }
    // 3000 tokens would take the tiny model many seconds; the engine stops within moments instead.
    await expect.poll(activeEngineRequests, { timeout: 10_000, interval: 50 }).toBe(0);

    // Without streaming: the client gives up while the engine generates. The reference engine finishes a
    // non-streaming generation anyway; once it has, the gateway must still have recorded nothing.
    const controller = new AbortController();
    const pending = gateway
      .openai()
      .chat.completions.create(plain({ ...long, max_tokens: 300 }), {
        headers: { 'X-Session-Id': sessionId },
        signal: controller.signal,
      })
      .catch((e: unknown) => e);
    await expect.poll(activeEngineRequests, { timeout: 10_000, interval: 20 }).toBe(1);
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await expect.poll(activeEngineRequests, { timeout: 30_000, interval: 100 }).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 100));

    expect(await recordsOf(sessionId)).toEqual([]);
    await gateway.delivered();
    expect(await sessionSignals(env.client, local(sessionId))).toEqual([]);
  });

  async function activeEngineRequests(): Promise<number> {
    const info = (await (await fetch(`${engine.url}/get_server_info`)).json()) as { active_requests: number };
    return info.active_requests;
  }

  it("relays the engine's own 4xx with its status and message", async () => {
    const error = await gateway
      .openai()
      .chat.completions.create(
        plain({ messages: [{ role: 'user', content: 'hi' }], frequency_penalty: 0.5, max_tokens: 2 }),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(400);
    expect((error as APIError).param).toBe('frequency_penalty');
    expect((error as APIError).message).toContain('frequency_penalty');
  });

  it('answers 503 (or an error event without [DONE]) when the turn cannot be recorded', async () => {
    // A store whose root is a file: every write fails.
    const blocker = join(dir, 'not-a-directory');
    await writeFile(blocker, 'x');
    const broken = await startTestGateway({
      engineUrl: engine.url,
      client: env.client,
      store: new FileSampleStore(blocker),
    });
    try {
      const sessionId = session('broken');
      const plain = await fetch(`${broken.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'X-Session-Id': sessionId },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
      });
      expect(plain.status).toBe(503);
      expect(plain.headers.get('retry-after')).toBe('5');
      expect(await plain.json()).toMatchObject({
        error: { type: 'server_error', code: 'turn_not_recorded' },
      });

      const streamed = await fetch(`${broken.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'X-Session-Id': sessionId },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, stream: true }),
      });
      expect(streamed.status).toBe(200);
      const text = await streamed.text();
      expect(text).toContain('"code":"turn_not_recorded"');
      expect(text).not.toContain('[DONE]');
      // The openai client raises it.
      const error = await broken
        .openai()
        .chat.completions.create(streaming({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }), {
          headers: { 'X-Session-Id': sessionId },
        })
        .then(async (stream) => {
          for await (const _ of stream) {
            // drain
          }
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(APIError);
      expect(await sessionSignals(env.client, local(sessionId))).toEqual([]);
    } finally {
      await broken.close();
    }
  });

  it('lists the engine models, reports health, and exposes metrics', async () => {
    const models = await gateway.openai().models.list();
    expect(models.data[0]?.id).toBeTruthy();

    const health = await (await fetch(`${gateway.url}/healthz`)).json();
    expect(health).toEqual({ ok: true, engine: { url: engine.url, kind: 'reference', reachable: true } });

    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toMatch(
      /openclaw_gateway_requests_total\{route="\/v1\/chat\/completions",status="200"\} \d+/,
    );
    expect(metrics).toMatch(
      /openclaw_gateway_requests_total\{route="\/v1\/chat\/completions",status="400"\} [1-9]/,
    );
    expect(metrics).toMatch(/openclaw_gateway_turns_recorded_total\{outcome="recorded"\} [1-9]/);
    expect(metrics).toMatch(/openclaw_gateway_turns_recorded_total\{outcome="duplicate"\} [1-9]/);
    expect(metrics).toMatch(/openclaw_gateway_turns_total\{turn_type="side"\} [1-9]/);
    expect(metrics).toMatch(/openclaw_gateway_time_to_first_token_seconds_count [1-9]/);
    expect(metrics).toMatch(
      /openclaw_gateway_request_duration_seconds_count\{route="\/v1\/chat\/completions"\} [1-9]/,
    );
    expect(metrics).toMatch(/openclaw_gateway_client_disconnects_total [2-9]/);
    expect(metrics).toMatch(
      /openclaw_gateway_requests_total\{route="\/v1\/chat\/completions",status="499"\} [2-9]/,
    );
    expect(metrics).toMatch(/openclaw_gateway_upstream_errors_total\{kind="client_error"\} [1-9]/);
    expect(metrics).toMatch(/openclaw_gateway_record_failures_total 0/);
    expect(metrics).toMatch(/openclaw_gateway_in_flight_requests 1/);
  });
});
