// A Messages request as the chat request the gateway's pipeline handles: the same conversation in OpenAI's
// spelling, so the engine renders the same prompt from it (its chat template sees identical messages), the
// session is identified from it as for a chat client, and the turn is recorded as that chat conversation. Pure.
//
// Block by block: text and images stay content parts (an image as an `image_url` part, base64 as a data URL);
// an assistant's `tool_use` blocks become its `tool_calls` (the input as JSON text) and its `thinking` blocks its
// `reasoning_content` (redacted thinking is dropped); each `tool_result` becomes a `tool` message, in place,
// with an error marked in its text. Content that is a single text is sent as a string, as chat clients do.

import type { ChatRequest } from '../chat-request-schema.js';
import type {
  MessagesContentBlock,
  MessagesMessage,
  MessagesRequest,
  MessagesTool,
  MessagesToolChoice,
} from './messages-request-schema.js';

/** Put before the text of a `tool_result` with `is_error: true`: the model reads that the tool failed. */
export const TOOL_ERROR_PREFIX = 'Error: ';

type ChatPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };
type ChatContent = string | ChatPart[];

// A type, not an interface: the chat request's loose messages take it as they are.
type ChatMessageOut = {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: ChatContent | null;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  reasoning_content?: string;
};

export function messagesToChat(request: MessagesRequest): ChatRequest {
  const messages: ChatMessageOut[] = [];
  const system = typeof request.system === 'object' ? collapse(request.system.map(textPart)) : request.system;
  // An empty system prompt is none (as Anthropic reads it), not an empty system turn.
  if (system !== undefined && system !== '') messages.push({ role: 'system', content: system });
  for (const message of request.messages) messages.push(...chatMessagesOf(message));

  const chat: ChatRequest = {
    model: request.model,
    messages,
    max_tokens: request.max_tokens,
  };
  if (request.stream) {
    chat.stream = true;
    // The final message_delta reports output tokens on side turns too.
    chat.stream_options = { include_usage: true };
  }
  if (request.temperature !== undefined) chat.temperature = request.temperature;
  if (request.top_p !== undefined) chat.top_p = request.top_p;
  if (request.top_k !== undefined) chat.top_k = request.top_k;
  if (request.stop_sequences?.length) chat.stop = request.stop_sequences;
  if (request.tools?.length) chat.tools = request.tools.map(chatTool);
  if (request.tool_choice) {
    chat.tool_choice = chatToolChoice(request.tool_choice);
    if ('disable_parallel_tool_use' in request.tool_choice && request.tool_choice.disable_parallel_tool_use)
      chat.parallel_tool_calls = false;
  }
  // Like the chat route's `user`, it names the session when no header or session_id does.
  if (request.metadata?.user_id) chat.user = request.metadata.user_id;
  // Qwen3-style templates switch reasoning with `enable_thinking`; a budget is not enforced.
  if (request.thinking) chat.chat_template_kwargs = { enable_thinking: request.thinking.type !== 'disabled' };
  if (request.session_id !== undefined) chat.session_id = request.session_id;
  if (request.session_done !== undefined) chat.session_done = request.session_done;
  if (request.turn_type !== undefined) chat.turn_type = request.turn_type;
  return chat;
}

/** One Messages message as the chat messages it stands for (a user message with tool results is several). */
function chatMessagesOf(message: MessagesMessage): ChatMessageOut[] {
  const { role, content } = message;
  if (typeof content === 'string') return [{ role, content }];
  if (role === 'assistant') return [assistantMessage(content)];
  const out: ChatMessageOut[] = [];
  let parts: ChatPart[] = [];
  const flush = () => {
    if (parts.length > 0) out.push({ role, content: collapse(parts) });
    parts = [];
  };
  for (const block of content) {
    if (block.type === 'tool_result') {
      flush();
      out.push({ role: 'tool', tool_call_id: block.tool_use_id, content: toolResultContent(block) });
    } else {
      const part = contentPart(block);
      if (part) parts.push(part);
    }
  }
  flush();
  if (out.length === 0) out.push({ role, content: '' });
  return out;
}

function assistantMessage(blocks: MessagesContentBlock[]): ChatMessageOut {
  const parts: ChatPart[] = [];
  const toolCalls: NonNullable<ChatMessageOut['tool_calls']> = [];
  let reasoning: string | null = null;
  for (const block of blocks) {
    if (block.type === 'tool_use')
      toolCalls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: toolArguments(block.input) },
      });
    else if (block.type === 'thinking') reasoning = (reasoning ?? '') + block.thinking;
    else {
      const part = contentPart(block);
      if (part) parts.push(part);
    }
  }
  const message: ChatMessageOut = { role: 'assistant', content: parts.length > 0 ? collapse(parts) : null };
  if (reasoning !== null) message.reasoning_content = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return message;
}

/**
 * A tool's input as chat arguments: its JSON. A string is sent as it is: a reply whose arguments were not JSON
 * reached the client as that text (messages-protocol.ts), and goes back the same.
 */
function toolArguments(input: unknown): string {
  if (typeof input === 'string') return input;
  return JSON.stringify(input ?? {});
}

function toolResultContent(block: Extract<MessagesContentBlock, { type: 'tool_result' }>): ChatContent {
  const parts: ChatPart[] =
    block.content === undefined
      ? []
      : typeof block.content === 'string'
        ? [{ type: 'text', text: block.content }]
        : block.content.flatMap((part) => contentPart(part) ?? []);
  if (block.is_error) {
    const first = parts[0];
    if (first?.type === 'text') parts[0] = { type: 'text', text: TOOL_ERROR_PREFIX + first.text };
    else parts.unshift({ type: 'text', text: TOOL_ERROR_PREFIX.trimEnd() });
  }
  return collapse(parts);
}

/** A text or image block as a chat content part; other blocks (redacted thinking) are not content. */
function contentPart(block: MessagesContentBlock): ChatPart | null {
  if (block.type === 'text') return textPart(block);
  if (block.type === 'image') {
    const source = block.source;
    const url = source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url;
    return { type: 'image_url', image_url: { url } };
  }
  return null;
}

function textPart(block: { text: string }): ChatPart {
  return { type: 'text', text: block.text };
}

/** A lone text part as the string it says (what a chat client sends); anything else as its parts. */
function collapse(parts: ChatPart[]): ChatContent {
  const [only, ...rest] = parts;
  if (only === undefined) return '';
  if (rest.length === 0 && only.type === 'text') return only.text;
  return parts;
}

function chatTool(tool: MessagesTool) {
  return {
    type: 'function' as const,
    function: {
      name: tool.name,
      ...(tool.description !== undefined && { description: tool.description }),
      parameters: tool.input_schema ?? { type: 'object' },
    },
  };
}

function chatToolChoice(choice: MessagesToolChoice): NonNullable<ChatRequest['tool_choice']> {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
  }
}
