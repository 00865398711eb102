// The gateway's pure parts: the SSE parser, the turn capture, what the client sees, canonical JSON, the
// engine request body and the explicit sampling parameters.

import { describe, expect, it } from 'vitest';
import { parsePolicyVersion } from '../../core/policy-version.js';
import { TurnCapture } from '../../engines/chat-capture.js';
import { engineChatChunkSchema, engineChatResponseSchema } from '../../engines/chat-schema.js';
import { SglangAdapter } from '../../engines/sglang-adapter.js';
import { VllmAdapter } from '../../engines/vllm-adapter.js';
import { parseChatRequest } from '../../gateway/chat-request-schema.js';
import { engineRequestBody } from '../../gateway/chat-turn.js';
import { clientChunk, clientResponse, clientWantsOf } from '../../gateway/client-response.js';
import { parseSseEvents } from '../../gateway/engine-stream.js';
import { canonicalJson } from '../../gateway/request-hash.js';
import { explicitSampling, NEUTRAL_SAMPLING } from '../../gateway/sampling.js';

async function* pieces(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.slice(i, i + size);
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

const chunk = (choice: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  engineChatChunkSchema.parse({ model: 'm', choices: [{ index: 0, ...choice }], ...extra });

describe('parseSseEvents', () => {
  const stream =
    ': keep-alive comment\r\n' +
    'data: {"a":"héllo wörld ✓"}\r\n\r\n' +
    'event: note\ndata: line one\ndata: line two\n\n' +
    'data:no-space\r\r' +
    'data: [DONE]';

  it('yields the same events however the bytes are split', async () => {
    const expected = [
      { event: null, data: '{"a":"héllo wörld ✓"}' },
      { event: 'note', data: 'line one\nline two' },
      { event: null, data: 'no-space' },
      { event: null, data: '[DONE]' },
    ];
    for (const size of [1, 2, 3, 7, 1000])
      expect(await collect(parseSseEvents(pieces(stream, size)))).toEqual(expected);
  });
});

describe('TurnCapture', () => {
  it('assembles ids, log-probs, text, reasoning and tool calls streamed in pieces', () => {
    const capture = new TurnCapture();
    capture.addChunk(chunk({ delta: { role: 'assistant', content: '' }, prompt_token_ids: [1, 2, 3] }));
    capture.addChunk(
      chunk({
        delta: { reasoning_content: 'think' },
        token_ids: [10],
        logprobs: { content: [{ logprob: -0.5 }] },
      }),
    );
    capture.addChunk(
      chunk({
        delta: { content: 'Hi' },
        token_ids: [11, 12],
        logprobs: { content: [{ logprob: -1 }, { logprob: -2 }] },
      }),
    );
    capture.addChunk(
      chunk({
        delta: {
          tool_calls: [
            { index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"x"' } },
          ],
        },
        token_ids: [13],
        logprobs: { content: [{ logprob: -3 }] },
      }),
    );
    capture.addChunk(chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] } }));
    capture.addChunk(
      chunk({ delta: {}, finish_reason: 'tool_calls' }, { metadata: { weight_version: '4' } }),
    );
    capture.addChunk(engineChatChunkSchema.parse({ choices: [], usage: { completion_tokens: 4 } }));

    expect(capture.finish()).toEqual({
      ok: true,
      turn: {
        model: 'm',
        response: {
          content: 'Hi',
          reasoningContent: 'think',
          toolCalls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }],
        },
        promptIds: [1, 2, 3],
        responseIds: [10, 11, 12, 13],
        responseLogProbs: [-0.5, -1, -2, -3],
        policyVersion: 4,
        finishReason: 'tool_calls',
      },
    });
  });

  it('reads a whole response, and refuses one without exact tokens', () => {
    const body = engineChatResponseSchema.parse({
      model: 'm',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'ok' },
          logprobs: { content: [{ logprob: -0.1 }] },
          finish_reason: 'stop',
          prompt_token_ids: [5],
          token_ids: [6],
        },
      ],
      metadata: { weight_version: 'step-12' },
    });
    const turn = TurnCapture.fromResponse(body).finish();
    expect(turn).toMatchObject({ ok: true, turn: { promptIds: [5], responseIds: [6], policyVersion: 12 } });

    const withoutIds = engineChatResponseSchema.parse({
      choices: [{ message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    });
    expect(TurnCapture.fromResponse(withoutIds).finish()).toMatchObject({ ok: false });
    const shortLogprobs = new TurnCapture();
    shortLogprobs.addChunk(chunk({ delta: { content: 'a' }, prompt_token_ids: [1], token_ids: [2, 3] }));
    expect(shortLogprobs.finish()).toEqual({
      ok: false,
      problem: 'the engine returned 0 log-probs for 2 tokens',
    });
  });
});

describe('the engine response schema', () => {
  it("takes a long prompt's token ids as they are, and refuses ids that are not token ids", () => {
    const promptIds = Array.from({ length: 53_000 }, (_, i) => (i * 7919) % 151_000);
    const response = (ids: unknown) => ({
      choices: [{ message: { content: 'hi' }, prompt_token_ids: ids, token_ids: [7] }],
    });
    const parsed = engineChatResponseSchema.parse(response(promptIds));
    expect(parsed.choices[0]?.prompt_token_ids).toBe(promptIds);
    for (const bad of [[1, -2], [1, 2.5], [1, '2'], '1,2', [1, null]]) {
      const result = engineChatResponseSchema.safeParse(response(bad));
      expect(result.success).toBe(false);
      expect(result.error?.issues[0]).toMatchObject({
        path: ['choices', 0, 'prompt_token_ids'],
        message: 'expected an array of token ids (integers, 0 or more)',
      });
    }
    expect(engineChatChunkSchema.safeParse({ choices: [{ token_ids: [3, -1] }] }).success).toBe(false);
    expect(engineChatResponseSchema.safeParse(response(null)).success).toBe(true);
  });
});

describe('what the client sees', () => {
  const parsed = parseChatRequest({ messages: [{ role: 'user', content: 'x' }], stream: true });
  if (!parsed.ok) throw parsed.error;
  const wants = clientWantsOf(parsed.request);

  it('drops the capture fields it did not ask for, and chunks left empty by that', () => {
    expect(
      clientChunk(
        {
          choices: [{ index: 0, delta: {}, logprobs: { content: [] }, token_ids: [3], finish_reason: null }],
        },
        wants,
        's',
      ),
    ).toBeNull();
    expect(clientChunk({ choices: [], usage: { total_tokens: 3 } }, wants, 's')).toBeNull();
    expect(
      clientChunk(
        { id: 'c', choices: [{ index: 0, delta: { content: 'a' }, token_ids: [3], logprobs: {} }] },
        wants,
        's',
      ),
    ).toEqual({ id: 'c', choices: [{ index: 0, delta: { content: 'a' }, logprobs: null }], session_id: 's' });
    expect(
      clientResponse(
        { choices: [{ message: {}, prompt_token_ids: [1], token_ids: [2], logprobs: {} }] },
        wants,
        's',
      ),
    ).toEqual({ choices: [{ message: {}, logprobs: null }], session_id: 's' });
  });
});

describe('engineRequestBody and explicit sampling', () => {
  it('strips session fields, makes sampling explicit and, for main turns only, asks for exact tokens in the engine spelling', () => {
    const parsed = parseChatRequest({
      messages: [{ role: 'user', content: 'x' }],
      session_id: 's',
      turn_type: 'main',
      session_done: true,
      stream: true,
      stream_options: { include_usage: false },
    });
    if (!parsed.ok) throw parsed.error;
    const sampling = explicitSampling(parsed.request, NEUTRAL_SAMPLING);
    const explicit = {
      temperature: 1,
      top_p: 1,
      top_k: -1,
      min_p: 0,
      presence_penalty: 0,
      frequency_penalty: 0,
      repetition_penalty: 1,
    };
    const sglang = new SglangAdapter('http://127.0.0.1:1');
    // SGLang refuses return_prompt_token_ids / return_token_ids on streams: its sglext flags instead.
    expect(engineRequestBody(sglang, parsed.request, true, sampling)).toEqual({
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      stream_options: { include_usage: true },
      ...explicit,
      logprobs: true,
      return_input_ids_in_sglext: true,
      return_output_ids_in_sglext: true,
    });
    expect(engineRequestBody(new VllmAdapter('http://127.0.0.1:1'), parsed.request, true, sampling)).toEqual({
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      stream_options: { include_usage: true },
      ...explicit,
      logprobs: true,
      return_token_ids: true,
    });
    expect(engineRequestBody(sglang, parsed.request, false, sampling)).toEqual({
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      stream_options: { include_usage: false },
      ...explicit,
    });
  });

  it("keeps the client's values, fills the rest from the defaults, and records what was sent", () => {
    const defaults = { temperature: 0.6, topP: 0.95, topK: 20, minP: 0 };
    const parsed = parseChatRequest({
      messages: [{ role: 'user', content: 'x' }],
      top_p: 0.5,
      top_k: 0,
      max_tokens: 12,
      seed: 3,
    });
    if (!parsed.ok) throw parsed.error;
    expect(explicitSampling(parsed.request, defaults)).toEqual({
      // top_k 0 is "off" to vLLM; SGLang only accepts -1 for that.
      engineFields: {
        temperature: 0.6,
        top_p: 0.5,
        top_k: -1,
        min_p: 0,
        presence_penalty: 0,
        frequency_penalty: 0,
        repetition_penalty: 1,
      },
      record: {
        temperature: 0.6,
        topP: 0.5,
        topK: null,
        minP: null,
        maxTokens: 12,
        seed: 3,
        constraints: [],
      },
    });
    const greedy = parseChatRequest({ messages: [{ role: 'user', content: 'x' }], temperature: 0 });
    if (!greedy.ok) throw greedy.error;
    expect(explicitSampling(greedy.request, defaults).record).toMatchObject({ temperature: 0, topK: 20 });
  });
});

describe('canonicalJson and parsePolicyVersion', () => {
  it('writes the same JSON whatever the key order', () => {
    expect(canonicalJson({ b: 1, a: [{ y: 2, x: undefined, z: null }] })).toBe(
      '{"a":[{"y":2,"z":null}],"b":1}',
    );
    expect(canonicalJson({ role: 'user', content: 'hi' })).toBe(
      canonicalJson({ content: 'hi', role: 'user' }),
    );
  });

  it('reads numeric weight versions out of strings', () => {
    expect(parsePolicyVersion('0')).toBe(0);
    expect(parsePolicyVersion(3)).toBe(3);
    expect(parsePolicyVersion('step-12')).toBe(12);
    expect(parsePolicyVersion('default')).toBe(0);
    expect(parsePolicyVersion(undefined)).toBeNull();
    expect(parsePolicyVersion(null)).toBeNull();
  });
});
