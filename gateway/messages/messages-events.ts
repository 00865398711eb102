// The engine's stream (canonical chat chunks) as Anthropic's server-sent events, written as they arrive:
// `message_start` with the first chunk, then per content block `content_block_start`, its deltas
// (`thinking_delta`, `text_delta`, `input_json_delta` for a tool call's arguments) and `content_block_stop`.
// The ending, `message_delta` (stop reason, usage) and `message_stop`, is written by `finish` once the turn is
// recorded; `message_stop` carries the gateway's `session_id` and `turn_id` (the SDK reads only its type), and
// `message_start`'s message carries `session_id` (the SDK keeps it on the message it accumulates). A stream that
// fails ends with an `error` event instead (anthropic-errors.ts).

import { sseEvent } from '../client-protocol.js';
import {
  count,
  firstOf,
  isJson,
  matchedStop,
  messageId,
  stopOf,
  type TurnIds,
  withIds,
} from './messages-response.js';

type Json = Record<string, unknown>;

type OpenBlock = { kind: 'thinking' | 'text'; index: number } | { kind: 'tool_use'; index: number };

export class MessagesEvents {
  private started = false;
  private blocks = 0;
  private open: OpenBlock | null = null;
  /** The content block of each chat tool-call index. */
  private readonly toolBlocks = new Map<number, number>();
  private finishReason: unknown = null;
  private matched: unknown = null;
  private usage: Json | null = null;

  /** `sessionId`: what `message_start` names (null for a conversation whose id is derived from its reply). */
  constructor(private readonly sessionId: string | null) {}

  /** The events for one engine chunk (none for a chunk that carries nothing the client sees). */
  chunk(chunk: Json): string[] {
    const events = this.start(chunk);
    if (isJson(chunk.usage)) this.usage = chunk.usage;
    const choice = firstOf(chunk.choices);
    if (choice === undefined) return events;
    const delta = isJson(choice.delta) ? choice.delta : {};
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '')
      events.push(...this.text('thinking', delta.reasoning_content));
    if (typeof delta.content === 'string' && delta.content !== '')
      events.push(...this.text('text', delta.content));
    if (Array.isArray(delta.tool_calls))
      for (const call of delta.tool_calls) if (isJson(call)) events.push(...this.toolCall(call));
    if (typeof choice.finish_reason === 'string') {
      this.finishReason = choice.finish_reason;
      this.matched = matchedStop(choice);
    }
    return events;
  }

  /** The ending, once the turn is recorded: the open block's stop, `message_delta`, `message_stop`. */
  finish(ids: TurnIds): string[] {
    const events = this.start({});
    events.push(...this.close());
    const usage = this.usage ?? {};
    events.push(
      event('message_delta', {
        type: 'message_delta',
        delta: stopOf(this.finishReason, this.matched, this.toolBlocks.size > 0),
        usage: { input_tokens: count(usage.prompt_tokens), output_tokens: count(usage.completion_tokens) },
      }),
      event('message_stop', withIds({ type: 'message_stop' }, ids)),
    );
    return events;
  }

  private start(chunk: Json): string[] {
    if (this.started) return [];
    this.started = true;
    const prompt = firstOf(chunk.choices)?.prompt_token_ids;
    const message = withIds(
      {
        id: messageId(chunk.id),
        type: 'message',
        role: 'assistant',
        model: typeof chunk.model === 'string' ? chunk.model : '',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        // The prompt's size when the engine already said it (a main turn's first chunk); else in message_delta.
        usage: { input_tokens: Array.isArray(prompt) ? prompt.length : 0, output_tokens: 0 },
      },
      { sessionId: this.sessionId, turnId: null },
    );
    return [event('message_start', { type: 'message_start', message })];
  }

  private text(kind: 'thinking' | 'text', text: string): string[] {
    const events: string[] = [];
    if (this.open?.kind !== kind) {
      events.push(...this.close());
      const block =
        kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
      events.push(...this.begin(kind, block));
    }
    const index = this.open?.index ?? 0;
    const delta = kind === 'text' ? { type: 'text_delta', text } : { type: 'thinking_delta', thinking: text };
    events.push(event('content_block_delta', { type: 'content_block_delta', index, delta }));
    return events;
  }

  /** A tool call's piece: its first piece (id, name) opens a tool_use block; its arguments are JSON deltas. */
  private toolCall(call: Json): string[] {
    const events: string[] = [];
    const callIndex = typeof call.index === 'number' ? call.index : this.toolBlocks.size;
    const fn = isJson(call.function) ? call.function : {};
    let index = this.toolBlocks.get(callIndex);
    if (index === undefined) {
      events.push(...this.close());
      const id = typeof call.id === 'string' && call.id !== '' ? call.id : `toolu_${this.toolBlocks.size}`;
      const name = typeof fn.name === 'string' ? fn.name : '';
      events.push(...this.begin('tool_use', { type: 'tool_use', id, name, input: {} }));
      index = this.open?.index ?? 0;
      this.toolBlocks.set(callIndex, index);
    }
    const args = fn.arguments;
    const partial =
      typeof args === 'string' ? args : args === undefined || args === null ? '' : JSON.stringify(args);
    if (partial !== '')
      events.push(
        event('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: partial },
        }),
      );
    return events;
  }

  private begin(kind: OpenBlock['kind'], block: Json): string[] {
    const index = this.blocks++;
    this.open = { kind, index };
    return [event('content_block_start', { type: 'content_block_start', index, content_block: block })];
  }

  private close(): string[] {
    if (this.open === null) return [];
    const { index } = this.open;
    this.open = null;
    return [event('content_block_stop', { type: 'content_block_stop', index })];
  }
}

/** One SSE event with its name, as Anthropic's API writes them. */
function event(name: string, data: Json): string {
  return sseEvent(data, name);
}
