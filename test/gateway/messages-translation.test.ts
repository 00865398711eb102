// The Messages translators on their own: an Anthropic agent's request becomes the chat request an OpenAI client
// would send for the same conversation (else the engine renders another prompt and the turn pairs with nothing),
// what the gateway cannot honour is refused naming the field, and the engine's answer and stream become what the
// official Anthropic SDK parses into the same Message.

import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { anthropicErrorEvent } from '../../gateway/messages/anthropic-errors.js';
import { MessagesEvents } from '../../gateway/messages/messages-events.js';
import { parseMessagesRequest } from '../../gateway/messages/messages-request-schema.js';
import { messagesResponse } from '../../gateway/messages/messages-response.js';
import { messagesToChat } from '../../gateway/messages/messages-to-chat.js';
import { badGateway } from '../../gateway/openai-errors.js';

const WEATHER = {
  name: 'get_weather',
  description: 'Current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

function parsed(body: Record<string, unknown>) {
  const result = parseMessagesRequest({ model: 'tiny', max_tokens: 16, ...body });
  if (!result.ok) throw new Error(result.error.message);
  return result.request;
}

function refusal(body: Record<string, unknown>): string {
  const result = parseMessagesRequest(body);
  if (result.ok) throw new Error('expected a refusal');
  expect(result.error.status).toBe(400);
  return result.error.message;
}

describe('Messages request → chat request', () => {
  it('maps a tool loop field by field into the chat conversation it stands for', () => {
    const chat = messagesToChat(
      parsed({
        system: [
          { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'Use tools.' },
        ],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Weather here?' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } },
              { type: 'image', source: { type: 'url', url: 'https://example.com/sky.jpg' } },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'Need the city.', signature: 'sig' },
              { type: 'redacted_thinking', data: 'opaque' },
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
              { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Lyon' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'call_1', content: '22 C' },
              {
                type: 'tool_result',
                tool_use_id: 'call_2',
                is_error: true,
                content: [{ type: 'text', text: 'no station' }],
              },
              { type: 'text', text: 'And tomorrow?' },
            ],
          },
        ],
        tools: [{ ...WEATHER, cache_control: { type: 'ephemeral' } }],
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
        temperature: 0.5,
        top_p: 0.9,
        top_k: 40,
        stop_sequences: ['###'],
        stream: true,
        metadata: { user_id: 'alice-chat-7' },
        thinking: { type: 'disabled' },
      }),
    );
    expect(chat).toEqual({
      model: 'tiny',
      max_tokens: 16,
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'Be brief.' },
            { type: 'text', text: 'Use tools.' },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather here?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } },
            { type: 'image_url', image_url: { url: 'https://example.com/sky.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Checking.',
          reasoning_content: 'Need the city.',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
            {
              id: 'call_2',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Lyon"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '22 C' },
        { role: 'tool', tool_call_id: 'call_2', content: 'Error: no station' },
        { role: 'user', content: 'And tomorrow?' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: WEATHER.description,
            parameters: WEATHER.input_schema,
          },
        },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      stop: ['###'],
      stream: true,
      stream_options: { include_usage: true },
      user: 'alice-chat-7',
      chat_template_kwargs: { enable_thinking: false },
    });
  });

  it('maps each tool_choice and a tool-only reply', () => {
    const base = { tools: [WEATHER], messages: [{ role: 'user', content: 'hi' }] };
    const choice = (tool_choice: Record<string, unknown>) =>
      messagesToChat(parsed({ ...base, tool_choice })).tool_choice;
    expect(choice({ type: 'auto' })).toBe('auto');
    expect(choice({ type: 'any' })).toBe('required');
    expect(choice({ type: 'none' })).toBe('none');
    expect(choice({ type: 'tool', name: 'get_weather' })).toEqual({
      type: 'function',
      function: { name: 'get_weather' },
    });
    const chat = messagesToChat(
      parsed({
        system: 'Sys',
        messages: [
          { role: 'user', content: 'Paris?' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'get_weather', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't' }] },
        ],
      }),
    );
    expect(chat.messages).toEqual([
      { role: 'system', content: 'Sys' },
      { role: 'user', content: 'Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 't', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 't', content: '' },
    ]);
    expect(chat).not.toHaveProperty('stream');
  });

  it('refuses what it cannot honour with a 400 naming the field', () => {
    const ok = { model: 'tiny', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
    expect(refusal({ model: 'tiny', messages: ok.messages })).toMatch(/^max_tokens: max_tokens is required/);
    expect(refusal({ ...ok, messages: [] })).toMatch(/^messages: /);
    expect(
      refusal({
        ...ok,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'read this' },
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' } },
            ],
          },
        ],
      }),
    ).toMatch(/^messages\.0\.content\.1\.type: document blocks \(PDF/);
    expect(
      refusal({
        ...ok,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f1' } }] }],
      }),
    ).toMatch(/^messages\.0\.content\.0\.source\.type: image sources of type "file"/);
    expect(refusal({ ...ok, messages: [{ role: 'user', content: [{ type: 'text' }] }] })).toMatch(
      /^messages\.0\.content\.0\.text: /,
    );
    expect(refusal({ ...ok, tools: [{ type: 'web_search_20250305', name: 'web_search' }] })).toMatch(
      /^tools\.0\.type: server tool "web_search_20250305" is not supported/,
    );
    expect(refusal({ ...ok, tools: [WEATHER], tool_choice: { type: 'tool', name: 'nope' } })).toMatch(
      /^tool_choice\.name: no tool named "nope"/,
    );
    expect(
      refusal({ ...ok, messages: [...ok.messages, { role: 'assistant', content: 'The answer is' }] }),
    ).toMatch(/^messages\.1\.role: a final assistant message/);
    expect(refusal({ ...ok, mcp_servers: [{ type: 'url', url: 'https://x', name: 'x' }] })).toMatch(
      /^mcp_servers: MCP servers are not supported/,
    );
    expect(refusal({ ...ok, temperature: 1.5 })).toMatch(/^temperature: /);
    expect(
      refusal({
        ...ok,
        messages: [
          { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x' }] },
          ok.messages[0],
        ],
      }),
    ).toMatch(/^messages\.0\.content\.0\.type: tool_result blocks are not accepted in a assistant message/);
  });
});

describe('engine answer → Message', () => {
  const engineAnswer = {
    id: 'chatcmpl-abc',
    model: 'tiny',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            {
              id: 'call_9',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        finish_reason: 'tool_calls',
        matched_stop: null,
      },
    ],
    usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 },
  };

  it('answers a non-streaming request with text and tool_use blocks and the turn ids', () => {
    expect(messagesResponse(engineAnswer, { sessionId: 's1', turnId: 's1:1-00' })).toEqual({
      id: 'msg_abc',
      type: 'message',
      role: 'assistant',
      model: 'tiny',
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'call_9', name: 'get_weather', input: { city: 'Paris' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 30, output_tokens: 12 },
      session_id: 's1',
      turn_id: 's1:1-00',
    });
    const stopped = (finish_reason: string, matched_stop: unknown) =>
      messagesResponse(
        { ...engineAnswer, choices: [{ message: { content: 'x' }, finish_reason, matched_stop }] },
        { sessionId: null, turnId: null },
      );
    expect(stopped('length', null)).toMatchObject({ stop_reason: 'max_tokens', stop_sequence: null });
    expect(stopped('stop', 151645)).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
    expect(stopped('stop', '###')).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: '###' });
    expect(stopped('stop', null)).not.toHaveProperty('session_id');
  });

  it('streams events the Anthropic SDK accumulates into the same Message', async () => {
    const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      id: 'chatcmpl-abc',
      model: 'tiny',
      choices: [{ index: 0, delta, finish_reason: null, ...extra }],
    });
    const events = new MessagesEvents('s1');
    const sse = [
      ...events.chunk(chunk({ role: 'assistant' }, { prompt_token_ids: [1, 2, 3] })),
      ...events.chunk(chunk({ reasoning_content: 'Hmm.' })),
      ...events.chunk(chunk({ content: 'Let me ' })),
      ...events.chunk(chunk({ content: 'check.' })),
      ...events.chunk(
        chunk({
          tool_calls: [
            { index: 0, id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        }),
      ),
      ...events.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] })),
      ...events.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] })),
      ...events.chunk(chunk({}, { finish_reason: 'tool_calls', matched_stop: null })),
      ...events.chunk({ id: 'chatcmpl-abc', choices: [], usage: { prompt_tokens: 3, completion_tokens: 9 } }),
      ...events.finish({ sessionId: 's1', turnId: 's1:1-00' }),
    ].join('');
    const client = sdkAnswering(sse);
    const stream = client.messages.stream({
      model: 'tiny',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const stops: unknown[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_stop') stops.push(event);
    });
    const message = await stream.finalMessage();
    expect(message).toMatchObject({
      id: 'msg_abc',
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Hmm.' },
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'call_9', name: 'get_weather', input: { city: 'Paris' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 9 },
      session_id: 's1',
    });
    expect(stops).toEqual([{ type: 'message_stop', session_id: 's1', turn_id: 's1:1-00' }]);
  });

  it('ends a failed stream with an error event the SDK raises as an API error', async () => {
    const events = new MessagesEvents(null);
    const sse = [
      ...events.chunk({ id: 'x', choices: [{ delta: { content: 'Hi' } }] }),
      anthropicErrorEvent(badGateway('the policy engine ended the stream before it was complete').toJSON()),
    ].join('');
    const stream = sdkAnswering(sse).messages.stream({
      model: 'tiny',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const error = await stream.finalMessage().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).type).toBe('api_error');
    expect(String(error)).toMatch(/ended the stream before it was complete/);
  });
});

/** An Anthropic client whose every request is answered with `sse` (the SDK's parsing only; no server). */
function sdkAnswering(sse: string): Anthropic {
  return new Anthropic({
    apiKey: 'test',
    maxRetries: 0,
    fetch: async () => new Response(sse, { status: 200, headers: { 'content-type': 'text/event-stream' } }),
  });
}
