// The Responses API protocol: the engine's chat answer as a `response` object (output items: `reasoning`,
// `message` with `output_text`, `function_call`), or, streamed, as Responses events with sequence numbers
// (`response.created` … `response.completed`), enough for the OpenAI SDK's stream helper to assemble the final
// response. The closing events (each open item's `.done`, then `response.completed`) come once the turn is
// recorded; the conversation is kept for `previous_response_id` just before them.

import { randomBytes } from 'node:crypto';
import type { ChatMessage } from '../../core/chat-messages.js';
import { type ClientProtocol, type ProtocolStream, sseEvent } from '../client-protocol.js';
import type { ResponsesRequest } from './responses-request-schema.js';

type Json = Record<string, unknown>;

/** One request's response, as far as the protocol needs it. */
export interface ResponseContext {
  request: ResponsesRequest;
  /** `resp_…` */
  id: string;
  /** Seconds since the epoch. */
  createdAt: number;
  /** Keeps the conversation with its answer for `previous_response_id`; null under `store: false`. */
  keep: ((answer: ChatMessage) => Promise<void>) | null;
}

export function newResponseId(): string {
  return `resp_${randomBytes(24).toString('hex')}`;
}

/** The assistant's answer, from a whole response or assembled from a stream. */
interface Answer {
  model: string | null;
  reasoning: string;
  content: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  usage: Json | null;
}

interface Ids {
  sessionId: string | null;
  turnId: string | null;
}

export function responsesProtocol(context: ResponseContext): ClientProtocol {
  return {
    name: 'responses',
    async response(body, view) {
      const answer = answerOf(body);
      await context.keep?.(assistantMessage(answer));
      return responseObject(context, answer, completedItems(answer), view);
    },
    stream: (view) => new ResponsesStream(context, view.sessionId),
    error: (error) => ({ status: error.status, body: error.toJSON() as unknown as Json }),
  };
}

/** The `response` object; `answer` null while it is in progress (`response.created`). */
function responseObject(context: ResponseContext, answer: Answer | null, output: Json[], ids: Ids): Json {
  const request = context.request;
  const incomplete = answer?.finishReason === 'length';
  const out: Json = {
    id: context.id,
    object: 'response',
    created_at: context.createdAt,
    status: answer === null ? 'in_progress' : incomplete ? 'incomplete' : 'completed',
    background: false,
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: answer?.model ?? request.model ?? null,
    output,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    store: request.store !== false,
    temperature: request.temperature ?? null,
    text: { format: request.text?.format ?? { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: (request.tools ?? []).map((tool) => ({
      type: 'function',
      name: tool.name,
      description: tool.description ?? null,
      parameters: tool.parameters ?? null,
      strict: tool.strict ?? null,
    })),
    top_p: request.top_p ?? null,
    truncation: 'disabled',
    usage: answer?.usage ? responsesUsage(answer.usage) : null,
    user: request.user ?? null,
  };
  if (ids.sessionId !== null) out.session_id = ids.sessionId;
  if (ids.turnId !== null) out.turn_id = ids.turnId;
  return out;
}

function responsesUsage(usage: Json): Json {
  const input = numberOr0(usage.prompt_tokens);
  const output = numberOr0(usage.completion_tokens);
  const details = (usage.prompt_tokens_details ?? {}) as Json;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: numberOr0(details.cached_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: typeof usage.total_tokens === 'number' ? usage.total_tokens : input + output,
  };
}

/** The answer of a non-streamed canonical chat response (its first choice). */
function answerOf(body: Json): Answer {
  const choice = (Array.isArray(body.choices) ? body.choices[0] : undefined) as Json | undefined;
  const message = (choice?.message ?? {}) as Json;
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
  return {
    model: typeof body.model === 'string' ? body.model : null,
    reasoning: typeof message.reasoning_content === 'string' ? message.reasoning_content : '',
    content: typeof message.content === 'string' ? message.content : '',
    toolCalls: calls.map((call) => {
      const fn = (call.function ?? {}) as Json;
      return {
        id: typeof call.id === 'string' ? call.id : newCallId(),
        name: typeof fn.name === 'string' ? fn.name : '',
        arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}),
      };
    }),
    finishReason: typeof choice?.finish_reason === 'string' ? choice.finish_reason : null,
    usage: (body.usage as Json | undefined) ?? null,
  };
}

/** The answer as the assistant message a chat client would send back: what the conversation continues from. */
function assistantMessage(answer: Answer): ChatMessage {
  const message: ChatMessage = {
    role: 'assistant',
    content: answer.content !== '' || answer.toolCalls.length === 0 ? answer.content : null,
  };
  if (answer.reasoning !== '') message.reasoning_content = answer.reasoning;
  if (answer.toolCalls.length > 0)
    message.tool_calls = answer.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  return message;
}

function completedItems(answer: Answer): Json[] {
  const items: Json[] = [];
  if (answer.reasoning !== '') items.push(reasoningItem(itemId('rs'), answer.reasoning, 'completed'));
  if (answer.content !== '' || answer.toolCalls.length === 0)
    items.push(messageItem(itemId('msg'), [textPart(answer.content)], 'completed'));
  for (const call of answer.toolCalls)
    items.push(functionCallItem(itemId('fc'), call.id, call.name, call.arguments, 'completed'));
  return items;
}

function reasoningItem(id: string, text: string | null, status: string): Json {
  return {
    type: 'reasoning',
    id,
    summary: [],
    content: text === null ? [] : [{ type: 'reasoning_text', text }],
    status,
  };
}

function messageItem(id: string, content: Json[], status: string): Json {
  return { type: 'message', id, status, role: 'assistant', content };
}

function textPart(text: string): Json {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

function functionCallItem(id: string, callId: string, name: string, args: string, status: string): Json {
  return { type: 'function_call', id, call_id: callId, name, arguments: args, status };
}

/** An output item being streamed. */
interface OpenItem {
  kind: 'reasoning' | 'message' | 'function_call';
  id: string;
  outputIndex: number;
  text: string;
  /** For a function call: its call id and name. */
  callId: string;
  name: string;
}

/** Encodes one streamed response from chat chunks, remembering what it sent to close it and sum it up. */
class ResponsesStream implements ProtocolStream {
  private sequence = 0;
  private started = false;
  private readonly output: Json[] = [];
  private open: OpenItem | null = null;
  /** Output indexes of the function calls, by their chat tool-call index. */
  private readonly calls = new Map<number, OpenItem>();
  private readonly answer: Answer = {
    model: null,
    reasoning: '',
    content: '',
    toolCalls: [],
    finishReason: null,
    usage: null,
  };

  constructor(
    private readonly context: ResponseContext,
    private readonly sessionId: string | null,
  ) {}

  chunk(chunk: Json): string[] {
    const events = this.start();
    if (typeof chunk.model === 'string') this.answer.model = chunk.model;
    if (chunk.usage && typeof chunk.usage === 'object') this.answer.usage = chunk.usage as Json;
    const choice = (Array.isArray(chunk.choices) ? chunk.choices[0] : undefined) as Json | undefined;
    if (choice === undefined) return events;
    const delta = (choice.delta ?? {}) as Json;
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '') {
      const item = this.ensure('reasoning', events);
      item.text += delta.reasoning_content;
      events.push(
        this.event('response.reasoning_text.delta', {
          item_id: item.id,
          output_index: item.outputIndex,
          content_index: 0,
          delta: delta.reasoning_content,
        }),
      );
    }
    if (typeof delta.content === 'string' && delta.content !== '') {
      const item = this.ensure('message', events);
      item.text += delta.content;
      events.push(
        this.event('response.output_text.delta', {
          item_id: item.id,
          output_index: item.outputIndex,
          content_index: 0,
          delta: delta.content,
          logprobs: [],
        }),
      );
    }
    for (const call of Array.isArray(delta.tool_calls) ? (delta.tool_calls as Json[]) : []) {
      const fn = (call.function ?? {}) as Json;
      const index = typeof call.index === 'number' ? call.index : 0;
      let item = this.calls.get(index);
      if (item === undefined) {
        item = this.openItem('function_call', events, {
          callId: typeof call.id === 'string' ? call.id : newCallId(),
          name: typeof fn.name === 'string' ? fn.name : '',
        });
        this.calls.set(index, item);
      }
      const args = typeof fn.arguments === 'string' ? fn.arguments : '';
      if (args !== '') {
        item.text += args;
        events.push(
          this.event('response.function_call_arguments.delta', {
            item_id: item.id,
            output_index: item.outputIndex,
            delta: args,
          }),
        );
      }
    }
    if (typeof choice.finish_reason === 'string') this.answer.finishReason = choice.finish_reason;
    return events;
  }

  async finish(_last: Json | null, ids: Ids): Promise<string[]> {
    const events = this.start();
    // An empty answer is an empty message, as the non-streamed response has it.
    if (this.calls.size === 0 && !this.output.some((item) => item.type === 'message'))
      this.ensure('message', events);
    this.close(events);
    await this.context.keep?.(assistantMessage(this.answer));
    const response = responseObject(this.context, this.answer, this.output, ids);
    const type = response.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    events.push(this.event(type, { response }));
    return events;
  }

  error(body: { error: unknown }): string[] {
    const error = (typeof body.error === 'object' && body.error !== null ? body.error : {}) as Json;
    const events: string[] = [];
    if (this.started) {
      const response = {
        ...responseObject(this.context, null, this.output, { sessionId: this.sessionId, turnId: null }),
        status: 'failed',
        error: { code: error.code ?? 'server_error', message: String(error.message ?? body.error) },
      };
      events.push(this.event('response.failed', { response }));
    }
    // `error` in OpenAI's shape too: the SDK raises it as an APIError.
    events.push(
      this.event('error', {
        code: error.code ?? null,
        message: String(error.message ?? body.error),
        param: error.param ?? null,
        error: body.error,
      }),
    );
    return events;
  }

  /** `response.created` and `response.in_progress`, before the first other event. */
  private start(): string[] {
    if (this.started) return [];
    this.started = true;
    const response = responseObject(this.context, null, [], { sessionId: this.sessionId, turnId: null });
    return [this.event('response.created', { response }), this.event('response.in_progress', { response })];
  }

  /** The open item of `kind`, opened (and the one before it closed) when another kind is open. */
  private ensure(kind: 'reasoning' | 'message', events: string[]): OpenItem {
    if (this.open?.kind === kind) return this.open;
    return this.openItem(kind, events, { callId: '', name: '' });
  }

  private openItem(
    kind: OpenItem['kind'],
    events: string[],
    call: { callId: string; name: string },
  ): OpenItem {
    this.close(events);
    const outputIndex = this.output.length;
    const prefix = kind === 'reasoning' ? 'rs' : kind === 'message' ? 'msg' : 'fc';
    const item: OpenItem = { kind, id: itemId(prefix), outputIndex, text: '', ...call };
    this.open = item;
    const added =
      kind === 'reasoning'
        ? reasoningItem(item.id, null, 'in_progress')
        : kind === 'message'
          ? messageItem(item.id, [], 'in_progress')
          : functionCallItem(item.id, call.callId, call.name, '', 'in_progress');
    this.output.push(added);
    events.push(this.event('response.output_item.added', { output_index: outputIndex, item: added }));
    if (kind !== 'function_call') {
      const part = kind === 'reasoning' ? { type: 'reasoning_text', text: '' } : textPart('');
      events.push(
        this.event('response.content_part.added', {
          item_id: item.id,
          output_index: outputIndex,
          content_index: 0,
          part,
        }),
      );
    }
    return item;
  }

  /** The `.done` events of the open item; its final form goes in the output. */
  private close(events: string[]): void {
    const item = this.open;
    if (item === null) return;
    this.open = null;
    const at = { item_id: item.id, output_index: item.outputIndex };
    let done: Json;
    if (item.kind === 'function_call') {
      this.answer.toolCalls.push({ id: item.callId, name: item.name, arguments: item.text });
      events.push(
        this.event('response.function_call_arguments.done', { ...at, name: item.name, arguments: item.text }),
      );
      done = functionCallItem(item.id, item.callId, item.name, item.text, 'completed');
    } else if (item.kind === 'reasoning') {
      this.answer.reasoning += item.text;
      const part = { type: 'reasoning_text', text: item.text };
      events.push(this.event('response.reasoning_text.done', { ...at, content_index: 0, text: item.text }));
      events.push(this.event('response.content_part.done', { ...at, content_index: 0, part }));
      done = reasoningItem(item.id, item.text, 'completed');
    } else {
      this.answer.content += item.text;
      const part = textPart(item.text);
      events.push(
        this.event('response.output_text.done', { ...at, content_index: 0, text: item.text, logprobs: [] }),
      );
      events.push(this.event('response.content_part.done', { ...at, content_index: 0, part }));
      done = messageItem(item.id, [part], 'completed');
    }
    this.output[item.outputIndex] = done;
    events.push(this.event('response.output_item.done', { output_index: item.outputIndex, item: done }));
  }

  private event(type: string, fields: Json): string {
    return sseEvent({ type, ...fields, sequence_number: this.sequence++ }, type);
  }
}

function itemId(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('hex')}`;
}

function newCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}

function numberOr0(value: unknown): number {
  return typeof value === 'number' ? value : 0;
}
