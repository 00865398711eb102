// An agent built on the OpenAI Responses API (Codex-style) talks to the gateway with the official `openai`
// client, in front of a real reference engine and the run's Temporal: its turns must train exactly as a
// chat-completions agent's do. What goes wrong otherwise: a prompt recorded from messages the engine never
// rendered, a follow-up by `previous_response_id` that starts a new session or pairs with nothing, a stream the
// SDK cannot assemble, a retry that generates again, a field the gateway cannot honour dropped silently.

import { APIError } from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { FunctionTool, Response, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveSessionId } from '../../core/session-id.js';
import { scopedSessionId } from '../../core/tenant.js';
import { findRecordedTurn } from '../support/turn-lookup.js';
import { type EngineStack, startEngineStack, startTestGateway, type TestGateway } from './gateway-fixture.js';

type GatewayResponse = Response & { session_id?: string; turn_id?: string };

const MODEL = 'tiny';
const TENANT = 'team-a';
const KEY = 'responses-key-a';
const OTHER_KEY = 'responses-key-b';

const WEATHER: FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
/** The same tool as a chat-completions client sends it. */
const WEATHER_CHAT: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: WEATHER.parameters as Record<string, unknown>,
    strict: false,
  },
};

describe('POST /v1/responses against a real engine and Temporal', () => {
  let stack: EngineStack;
  let gateway: TestGateway;
  const session = (label: string) => stack.session(label, TENANT);
  const record = (sessionId: string, turn: number) =>
    findRecordedTurn(gateway.store, scopedSessionId(TENANT, sessionId), turn);

  beforeAll(async () => {
    stack = await startEngineStack('responses-api');
    gateway = await startTestGateway({
      engineUrl: stack.engine.url,
      client: stack.env.client,
      apiKeys: [
        { key: KEY, tenant: TENANT },
        { key: OTHER_KEY, tenant: 'team-b' },
      ],
    });
  }, 180_000);

  afterAll(async () => {
    await gateway?.close();
    await stack?.close();
  });

  async function tokenize(body: Record<string, unknown>): Promise<number[]> {
    const response = await fetch(`${stack.engine.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, add_generation_prompt: true }),
    });
    return ((await response.json()) as { tokens: number[] }).tokens;
  }

  it('continues by previous_response_id with the prompts, session and pairing of the chat equivalent', async () => {
    const client = gateway.openai(KEY);
    const viaResponses = session('responses');
    const viaChat = session('chat');
    const system = 'Use tools when useful.';
    // Greedy, so both APIs get the same reply to the same prompt.
    const common = { model: MODEL, tools: [WEATHER], max_output_tokens: 4, temperature: 0 };

    const first = (await client.responses.create(
      { ...common, instructions: system, input: 'Weather in Paris?' },
      { headers: { 'X-Session-Id': viaResponses } },
    )) as GatewayResponse;
    expect(first).toMatchObject({
      object: 'response',
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      instructions: system,
      previous_response_id: null,
      session_id: viaResponses,
      usage: { output_tokens: 4 },
      tools: [WEATHER],
    });
    expect(first.id).toMatch(/^resp_/);
    expect(first.output.map((item) => item.type)).toEqual(['message']);
    expect(first.turn_id).toMatch(new RegExp(`^${viaResponses}:1-`));

    const second = (await client.responses.create(
      {
        ...common,
        instructions: system,
        previous_response_id: first.id,
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'And in Rome?' }] }],
      },
      { headers: { 'X-Session-Id': viaResponses } },
    )) as GatewayResponse;
    expect(second.previous_response_id).toBe(first.id);

    // The same conversation through chat completions.
    const opening: ChatCompletionMessageParam[] = [
      { role: 'system', content: system },
      { role: 'user', content: 'Weather in Paris?' },
    ];
    const chatCommon = { model: MODEL, tools: [WEATHER_CHAT], max_tokens: 4, temperature: 0 };
    const chatFirst = await client.chat.completions.create(
      { ...chatCommon, messages: opening },
      { headers: { 'X-Session-Id': viaChat } },
    );
    const reply = chatFirst.choices[0]?.message;
    expect(first.output_text).toBe(reply?.content);
    const continued: ChatCompletionMessageParam[] = [
      ...opening,
      { role: 'assistant', content: reply?.content ?? null },
      { role: 'user', content: 'And in Rome?' },
    ];
    await client.chat.completions.create(
      { ...chatCommon, messages: continued },
      { headers: { 'X-Session-Id': viaChat } },
    );

    const [r1, r2, c1, c2] = await Promise.all([
      record(viaResponses, 1),
      record(viaResponses, 2),
      record(viaChat, 1),
      record(viaChat, 2),
    ]);
    // Exact capture: the prompt the engine sampled from is its own rendering of the chat messages.
    expect(r1?.promptIds).toEqual(await tokenize({ messages: opening, tools: [WEATHER_CHAT] }));
    expect(r1?.tools).toEqual([WEATHER_CHAT]);
    expect(r2?.promptIds).toEqual(await tokenize({ messages: continued, tools: [WEATHER_CHAT] }));
    expect(r2?.promptIds).toEqual(c2?.promptIds);
    expect(r2?.responseIds).toEqual(c2?.responseIds);
    // Paired the same way: the follow-up continues the first turn, in both.
    expect(r2?.continues?.sampleId).toBe(r1?.sampleId);
    expect(c2?.continues?.sampleId).toBe(c1?.sampleId);
    expect(second.turn_id).toBe(r2?.sampleId.split('/').at(-1));

    // Without a session id, the follow-up derives the one the chat conversation would.
    const opener = `Derived ${Math.random()}`;
    const derived = (await client.responses.create({ ...common, input: opener })) as GatewayResponse;
    const next = (await client.responses.create({
      ...common,
      previous_response_id: derived.id,
      input: 'Go on.',
    })) as GatewayResponse;
    const derivedId = deriveSessionId(TENANT, `user:${opener}`);
    stack.sessions.add(scopedSessionId(TENANT, derivedId));
    expect(next.session_id).toBe(derivedId);
    expect((await record(derivedId, 2))?.continues?.sampleId).toBe((await record(derivedId, 1))?.sampleId);

    // Another tenant cannot continue it.
    const foreign = await gateway
      .openai(OTHER_KEY)
      .responses.create({ ...common, previous_response_id: first.id, input: 'Mine now?' })
      .catch((error: unknown) => error);
    expect(foreign).toBeInstanceOf(APIError);
    expect((foreign as APIError).status).toBe(404);
    expect((foreign as APIError).param).toBe('previous_response_id');
  });

  it('streams events the SDK assembles, with a function call and its output in the input', async () => {
    const sessionId = session('stream');
    const input = [
      { role: 'user' as const, content: 'Weather in Paris?' },
      {
        type: 'function_call' as const,
        call_id: 'call_1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
      },
      { type: 'function_call_output' as const, call_id: 'call_1', output: '22 C and sunny' },
    ];
    const stream = gateway
      .openai(KEY)
      .responses.stream(
        { model: MODEL, input, tools: [WEATHER], max_output_tokens: 5, store: false },
        { headers: { 'X-Session-Id': sessionId } },
      );
    const events: ResponseStreamEvent[] = [];
    let text = '';
    for await (const event of stream) {
      events.push(event);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    const final = (await stream.finalResponse()) as GatewayResponse;
    const types = events.map((event) => event.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.incomplete',
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const message = final.output[0];
    expect(final.output).toHaveLength(1);
    expect(message).toMatchObject({ type: 'message', content: [{ type: 'output_text', text }] });
    const last = events.at(-1) as { response: GatewayResponse };
    expect(last.response.output).toMatchObject([{ id: message?.id, content: [{ text }] }]);
    expect(last.response).toMatchObject({ status: 'incomplete', usage: { output_tokens: 5 } });

    const recorded = await record(sessionId, 2);
    const messages: ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Weather in Paris?' },
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
    expect(recorded?.messages).toEqual(messages);
    expect(recorded?.promptIds).toEqual(await tokenize({ messages, tools: [WEATHER_CHAT] }));
    expect(recorded?.response.content).toBe(text);
    expect(last.response.turn_id).toBe(recorded?.sampleId.split('/').at(-1));

    // `store: false`: nothing to continue.
    const gone = await gateway
      .openai(KEY)
      .responses.create({ model: MODEL, previous_response_id: final.id, input: 'More?' })
      .catch((error: unknown) => error);
    expect((gone as APIError).status).toBe(404);
  });

  it('streams a function call the engine makes, then continues from its output by previous_response_id', async () => {
    const sessionId = session('tool-loop');
    const client = gateway.openai(KEY);
    const headers = { 'X-Session-Id': sessionId };
    // A named tool_choice: the reference engine then answers with a call to that tool.
    const common = {
      model: MODEL,
      tools: [WEATHER],
      max_output_tokens: 24,
      tool_choice: { type: 'function' as const, name: 'get_weather' },
    };
    const stream = client.responses.stream({ ...common, input: 'Weather in Paris?' }, { headers });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = (await stream.finalResponse()) as GatewayResponse;
    expect(types).toContain('response.function_call_arguments.done');
    const call = final.output.find((item) => item.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('no function_call item');
    expect(call.name).toBe('get_weather');
    expect(call.call_id).toBeTruthy();
    const recorded = await record(sessionId, 1);
    const recordedCalls = recorded?.response.toolCalls as { id: string; function: { arguments: string } }[];
    expect(recordedCalls?.map((c) => [c.id, c.function.arguments])).toEqual([[call.call_id, call.arguments]]);

    const next = (await client.responses.create(
      {
        ...common,
        tool_choice: 'auto',
        max_output_tokens: 3,
        previous_response_id: final.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '22 C and sunny' }],
      },
      { headers },
    )) as GatewayResponse;
    const second = await record(sessionId, 2);
    expect(second?.messages.slice(-2)).toMatchObject([
      { role: 'assistant', tool_calls: [{ id: call.call_id, function: { name: 'get_weather' } }] },
      { role: 'tool', tool_call_id: call.call_id, content: '22 C and sunny' },
    ]);
    expect(second?.promptIds).toEqual(await tokenize({ messages: second?.messages, tools: [WEATHER_CHAT] }));
    expect(second?.continues?.sampleId).toBe(recorded?.sampleId);
    expect(next.turn_id).toBe(second?.sampleId.split('/').at(-1));
  });

  it('replays an Idempotency-Key retry byte for byte and names the field it cannot honour', async () => {
    const sessionId = session('idempotent');
    const post = (body: Record<string, unknown>, key: string) =>
      fetch(`${gateway.url}/v1/responses`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
          'idempotency-key': key,
          'x-session-id': sessionId,
        },
        body: JSON.stringify(body),
      });
    for (const stream of [false, true]) {
      const body = { model: MODEL, input: `Once ${stream}`, max_output_tokens: 3, stream };
      const key = `responses-${stream}-${Math.random()}`;
      const first = await post(body, key);
      const firstText = await first.text();
      const again = await post(body, key);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.text()).toBe(firstText);
      expect(firstText).toContain(stream ? 'event: response.incomplete' : '"object":"response"');
    }

    const refused = async (body: Record<string, unknown>) => {
      const error = await gateway
        .openai(KEY)
        .responses.create({ model: MODEL, input: 'Hi', ...body } as never)
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(APIError);
      expect((error as APIError).status).toBe(400);
      return (error as APIError).param;
    };
    expect(await refused({ tools: [{ type: 'web_search' }] })).toBe('tools[0].type');
    expect(await refused({ background: true })).toBe('background');
    expect(await refused({ include: ['reasoning.encrypted_content'] })).toBe('include[0]');
    expect(await refused({ input: [{ type: 'item_reference', id: 'msg_1' }] })).toBe('input[0].type');
    expect(await refused({ reasoning: { effort: 'high' } })).toBe('reasoning.effort');
    expect(await refused({ frobnicate: 1 })).toBe('frobnicate');
  });
});
