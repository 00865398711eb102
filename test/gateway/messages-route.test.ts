// An Anthropic agent uses the gateway as its Messages API through the official SDK: it asks for the weather with
// a tool, gets a tool_use, sends the tool's result back on a stream, retries with an Idempotency-Key, and sends
// a request the gateway cannot serve. What goes wrong if the route is not the chat path's equal: a turn recorded
// with a prompt the engine did not see (re-tokenised differently), a follow-up that pairs with nothing, a
// retry that generates afresh, or an error the SDK cannot type. The real reference engine, Temporal and HTTP.

import Anthropic from '@anthropic-ai/sdk';
import type { Message, MessageParam, Tool, ToolUseBlock } from '@anthropic-ai/sdk/resources/messages';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientSessionId, scopedSessionId } from '../../core/tenant.js';
import { findRecordedTurn, recordedTurns } from '../support/turn-lookup.js';
import { type EngineStack, startEngineStack, startTestGateway, type TestGateway } from './gateway-fixture.js';

const MODEL = 'tiny';
const KEY = 'sk-messages-test';
const TENANT = 'anthropic-agent';
const SYSTEM = 'Use tools when useful.';

const WEATHER: Tool = {
  name: 'get_weather',
  description: 'Current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
/** The same tool as a chat client declares it. */
const CHAT_WEATHER = {
  type: 'function',
  function: { name: WEATHER.name, description: WEATHER.description, parameters: WEATHER.input_schema },
};

type GatewayMessage = Message & { session_id?: string; turn_id?: string };

describe('POST /v1/messages with the Anthropic SDK against a real engine and Temporal', () => {
  let stack: EngineStack;
  let gateway: TestGateway;
  /** Sends the key as `Authorization: Bearer` (how this SDK sends `apiKey`). */
  let bearer: Anthropic;
  /** Sends the key as `x-api-key` (how Anthropic's API and most of its clients take it). */
  let apiKeyHeader: Anthropic;
  const scoped = (id: string) => scopedSessionId(TENANT, id);

  beforeAll(async () => {
    stack = await startEngineStack('messages');
    gateway = await startTestGateway({
      engineUrl: stack.engine.url,
      client: stack.env.client,
      apiKeys: [{ key: KEY, tenant: TENANT }],
    });
    bearer = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 });
    apiKeyHeader = new Anthropic({
      baseURL: gateway.url,
      authToken: null,
      apiKey: null,
      defaultHeaders: { 'x-api-key': KEY, authorization: null },
      maxRetries: 0,
    });
  }, 180_000);

  afterAll(async () => {
    await gateway?.close();
    await stack?.close();
  });

  /** The engine's own tokenisation of a chat request's prompt. */
  async function tokenize(body: Record<string, unknown>): Promise<number[]> {
    const response = await fetch(`${stack.engine.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, add_generation_prompt: true }),
    });
    return ((await response.json()) as { tokens: number[] }).tokens;
  }

  it('records a tool loop exactly as its chat conversation, and pairs the tool result with the call', async () => {
    const sessionId = stack.session('tool-loop', TENANT);
    const headers = { 'X-Session-Id': sessionId };
    const opening: MessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];

    // A named tool choice: the reference engine feeds the call, so the reply is a tool_use for sure.
    const first = (await bearer.messages.create(
      {
        model: MODEL,
        max_tokens: 64,
        system: SYSTEM,
        messages: opening,
        tools: [WEATHER],
        tool_choice: { type: 'tool', name: 'get_weather' },
      },
      { headers },
    )) as GatewayMessage;
    expect(first).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: expect.any(String),
      stop_reason: 'tool_use',
      stop_sequence: null,
      session_id: sessionId,
    });
    expect(first.id).toMatch(/^msg_/);
    expect(first.content).toHaveLength(1);
    const call = first.content[0] as ToolUseBlock;
    expect(call).toMatchObject({ type: 'tool_use', id: expect.any(String), name: 'get_weather' });
    expect(call.input).toEqual({ city: expect.any(String) });

    // Recorded before the answer, with the tokens the engine renders for the same chat conversation.
    const turn1 = await findRecordedTurn(gateway.store, scoped(sessionId), 1);
    const chatOpening = [{ role: 'system', content: SYSTEM }, ...opening];
    expect(first.turn_id).toBe(clientSessionId(turn1?.sampleId ?? null));
    expect(turn1?.messages).toEqual(chatOpening);
    expect(turn1?.tools).toEqual([CHAT_WEATHER]);
    expect(turn1?.promptIds).toEqual(await tokenize({ messages: chatOpening, tools: [CHAT_WEATHER] }));
    expect(first.usage).toEqual({
      input_tokens: turn1?.promptIds.length,
      output_tokens: turn1?.responseIds.length,
    });

    // The tool's result, streamed, with the key as x-api-key.
    const stream = apiKeyHeader.messages.stream(
      {
        model: MODEL,
        max_tokens: 8,
        system: SYSTEM,
        messages: [
          ...opening,
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: call.id, content: '22 C and sunny' }],
          },
        ],
        tools: [WEATHER],
      },
      { headers },
    );
    const stops: Record<string, unknown>[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_stop') stops.push({ ...event });
    });
    const second = (await stream.finalMessage()) as GatewayMessage;
    const turn2 = await findRecordedTurn(gateway.store, scoped(sessionId), 2);
    expect(second).toMatchObject({ role: 'assistant', session_id: sessionId });
    expect(second.usage).toMatchObject({
      input_tokens: turn2?.promptIds.length,
      output_tokens: turn2?.responseIds.length,
    });
    expect(stops).toEqual([
      { type: 'message_stop', session_id: sessionId, turn_id: clientSessionId(turn2?.sampleId ?? null) },
    ]);
    const text = second.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
    expect(turn2?.response.content ?? '').toBe(text);

    // What an OpenAI client sends for the same loop: the call as tool_calls, the result as a tool message.
    const chatLoop = [
      ...chatOpening,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: JSON.stringify(call.input) },
          },
        ],
      },
      { role: 'tool', tool_call_id: call.id, content: '22 C and sunny' },
    ];
    expect(turn2?.messages).toEqual(chatLoop);
    expect(turn2?.promptIds).toEqual(await tokenize({ messages: chatLoop, tools: [CHAT_WEATHER] }));
    // Paired: the tool result is the next state of the call it answers.
    expect(turn2?.continues?.sampleId).toBe(turn1?.sampleId);

    // Feedback names the streamed turn by the turn_id its message_stop carried.
    const feedback = await fetch(`${gateway.url}/v1/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ turn_id: stops[0]?.turn_id, rating: 1 }),
    });
    expect(feedback.status).toBe(200);
    expect(await feedback.json()).toMatchObject({ turn_id: stops[0]?.turn_id, position: 2, rating: 1 });
  });

  it('replays an Idempotency-Key retry of a stream byte for byte without asking the engine again', async () => {
    const sessionId = stack.session('idempotent', TENANT);
    const send = () =>
      fetch(`${gateway.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': KEY,
          'X-Session-Id': sessionId,
          'Idempotency-Key': `messages-${sessionId}`,
        },
        body: JSON.stringify({
          model: MODEL,
          max_tokens: 6,
          stream: true,
          messages: [{ role: 'user', content: 'Count to three.' }],
        }),
      });
    const original = await send();
    const originalText = await original.text();
    const retry = await send();
    const retryText = await retry.text();
    expect(original.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retryText).toBe(originalText);
    const names = [...originalText.matchAll(/^event: (\S+)$/gm)].map((match) => match[1]);
    expect(names[0]).toBe('message_start');
    expect(names.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(await recordedTurns(gateway.store, scoped(sessionId))).toHaveLength(1);
  });

  // A Claude-style agent counts its context before sending it: the count must be the one the turn then reports
  // (a gateway counting with another tokenizer or template would have the agent trim too much or too little).
  it('counts input tokens as the engine renders the conversation, as messages.create then reports them', async () => {
    const sessionId = stack.session('count-tokens', TENANT);
    const headers = { 'X-Session-Id': sessionId };
    const messages: MessageParam[] = [{ role: 'user', content: 'How long is this conversation?' }];
    const counted = await apiKeyHeader.messages.countTokens(
      { model: MODEL, system: SYSTEM, messages, tools: [WEATHER] },
      { headers },
    );
    const chatMessages = [{ role: 'system', content: SYSTEM }, ...messages];
    expect(counted).toEqual({
      input_tokens: (await tokenize({ messages: chatMessages, tools: [CHAT_WEATHER] })).length,
    });
    // Counting is not a turn: nothing recorded.
    expect(await recordedTurns(gateway.store, scoped(sessionId))).toEqual([]);
    const created = await bearer.messages.create(
      { model: MODEL, max_tokens: 4, system: SYSTEM, messages, tools: [WEATHER] },
      { headers },
    );
    expect(created.usage.input_tokens).toBe(counted.input_tokens);

    // What it cannot count is an error the SDK types, naming the field.
    const image = await apiKeyHeader.messages
      .countTokens({
        model: MODEL,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            ],
          },
        ],
      })
      .catch((error: unknown) => error);
    expect(image).toBeInstanceOf(Anthropic.BadRequestError);
    expect((image as InstanceType<typeof Anthropic.BadRequestError>).apiMessage).toMatch(
      /^messages\.0\.content\.1: count_tokens does not count images/,
    );
    const empty = await apiKeyHeader.messages
      .countTokens({ model: MODEL, messages: [] })
      .catch((error: unknown) => error);
    expect(empty).toBeInstanceOf(Anthropic.BadRequestError);
    expect((empty as InstanceType<typeof Anthropic.BadRequestError>).apiMessage).toMatch(/^messages: /);
  });

  it('answers what it cannot serve, and a missing key, with errors the SDK types', async () => {
    const bad = await bearer.messages
      .create({
        model: MODEL,
        max_tokens: 8,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' } },
            ],
          },
        ],
      })
      .catch((error: unknown) => error);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    const badRequest = bad as InstanceType<typeof Anthropic.BadRequestError>;
    expect(badRequest.type).toBe('invalid_request_error');
    expect(badRequest.apiMessage).toMatch(/^messages\.0\.content\.0\.type: document blocks/);
    expect(badRequest.error).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: badRequest.apiMessage },
    });

    // The gateway's own errors too, before the route reads the body.
    const malformed = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY },
      body: '{"model": ',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(/not valid JSON/) },
    });

    const keyless = new Anthropic({
      baseURL: gateway.url,
      apiKey: null,
      authToken: null,
      defaultHeaders: { authorization: null },
      maxRetries: 0,
    });
    const unauthenticated = await keyless.messages
      .create({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(unauthenticated).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((unauthenticated as InstanceType<typeof Anthropic.AuthenticationError>).type).toBe(
      'authentication_error',
    );
  });
});
