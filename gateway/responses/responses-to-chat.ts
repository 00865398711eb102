// A Responses API request as the chat request the gateway's pipeline handles: the same messages a
// chat-completions client would send for the same conversation, so the session, the exact capture and the
// pairing of turns are the same whichever API the agent speaks (docs/gateway.md, "Responses API").

import type { ChatContentPart, ChatMessage } from '../../core/chat-messages.js';
import { type ChatRequest, parseChatRequest } from '../chat-request-schema.js';
import { invalidRequest } from '../openai-errors.js';
import type {
  ResponsesContentPart,
  ResponsesInputItem,
  ResponsesRequest,
} from './responses-request-schema.js';

export interface ChatTranslation {
  chat: ChatRequest;
  /**
   * The conversation without the request's `instructions` (a follow-up's own instructions replace them, as
   * OpenAI's do): the previous response's, then this request's input. Kept with the answer for
   * `previous_response_id`.
   */
  conversation: ChatMessage[];
}

/** `previous`: the stored conversation `previous_response_id` names (its answer last), if any. */
export function responsesToChat(
  request: ResponsesRequest,
  previous: readonly ChatMessage[],
): ChatTranslation {
  const input: ResponsesInputItem[] =
    typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : request.input;
  const conversation = [...previous, ...inputMessages(input)];
  const messages: ChatMessage[] = request.instructions
    ? [{ role: 'system', content: request.instructions }, ...conversation]
    : conversation;
  const stream = request.stream === true;
  const body = dropAbsent({
    model: request.model,
    messages,
    stream,
    // Usage arrives in the last chunk: `response.completed` carries it.
    stream_options: stream ? { include_usage: true } : undefined,
    temperature: request.temperature,
    top_p: request.top_p,
    max_tokens: request.max_output_tokens,
    tools: request.tools?.map(({ type: _type, name, description, parameters, strict }) => ({
      type: 'function',
      function: dropAbsent({ name, description, parameters, strict }),
    })),
    tool_choice:
      typeof request.tool_choice === 'object'
        ? { type: 'function', function: { name: request.tool_choice.name } }
        : request.tool_choice,
    parallel_tool_calls: request.parallel_tool_calls,
    user: request.user,
    response_format: responseFormat(request.text?.format),
    session_id: request.session_id,
    session_done: request.session_done,
    turn_type: request.turn_type,
  });
  const parsed = parseChatRequest(body);
  if (!parsed.ok) {
    if (messages.length === 0) throw invalidRequest('input: must hold at least one item', 'input');
    throw parsed.error;
  }
  return { chat: parsed.request, conversation };
}

/**
 * Input items as chat messages: a `function_call` joins the assistant message just before it (one assistant
 * turn with text and tool calls, as chat has it), a `reasoning` item becomes the next assistant message's
 * `reasoning_content`, a `function_call_output` is a `tool` message.
 */
function inputMessages(items: readonly ResponsesInputItem[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  // The assistant message the next function call joins; null once another kind of item came between.
  let open: ChatMessage | null = null;
  let reasoning: string | null = null;
  const assistant = (content: ChatMessage['content']): ChatMessage => {
    const message: ChatMessage = { role: 'assistant', content };
    if (reasoning !== null) message.reasoning_content = reasoning;
    reasoning = null;
    messages.push(message);
    return message;
  };
  for (const item of items) {
    if (item.type === 'reasoning') {
      const parts = item.content?.length ? item.content : (item.summary ?? []);
      reasoning = parts.map((part) => part.text).join('\n');
    } else if (item.type === 'function_call') {
      open ??= assistant(null);
      const calls = Array.isArray(open.tool_calls) ? open.tool_calls : [];
      open.tool_calls = [
        ...calls,
        { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } },
      ];
    } else if (item.type === 'function_call_output') {
      open = null;
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: chatContent(item.output) });
    } else if (item.role === 'assistant') {
      open = assistant(chatContent(item.content));
    } else {
      open = null;
      messages.push({ role: item.role, content: chatContent(item.content) });
    }
  }
  return messages;
}

/** Text parts become one string (what the chat template renders anyway); with an image, chat content parts. */
function chatContent(content: string | readonly ResponsesContentPart[]): string | ChatContentPart[] {
  if (typeof content === 'string') return content;
  const parts = content.map(chatPart);
  if (parts.every((part) => part.type === 'text')) return parts.map((part) => part.text).join(' ');
  return parts;
}

function chatPart(part: ResponsesContentPart): ChatContentPart {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text };
    case 'refusal':
      return { type: 'text', text: part.refusal };
    case 'input_image':
      return {
        type: 'image_url',
        image_url: dropAbsent({ url: part.image_url, detail: part.detail }),
      };
  }
}

function responseFormat(
  format: NonNullable<ResponsesRequest['text']>['format'],
): Record<string, unknown> | undefined {
  if (format === undefined || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  const { type: _type, ...schema } = format;
  return { type: 'json_schema', json_schema: schema };
}

/** The object without its undefined and null fields (null means "the default" in both APIs). */
function dropAbsent<T extends Record<string, unknown>>(object: T): T {
  return Object.fromEntries(
    Object.entries(object).filter(([, value]) => value !== undefined && value !== null),
  ) as T;
}
