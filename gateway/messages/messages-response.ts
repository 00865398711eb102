// The engine's answer (the canonical chat completion, engines/chat-schema.ts) as an Anthropic Message: its
// reasoning as a `thinking` block, its text as a `text` block, each tool call as a `tool_use` block whose input
// is the parsed arguments, the finish reason as a stop reason, and usage in input and output tokens. The
// gateway's `session_id` and, on a recorded main turn, `turn_id` are extra top-level fields (the SDK keeps
// them on the object it returns). Pure.

type Json = Record<string, unknown>;

export interface TurnIds {
  /** The session as the client names it (without its tenant); null when the request has none yet. */
  sessionId: string | null;
  /** The recorded turn, for `POST /v1/feedback`; null on a side turn. */
  turnId: string | null;
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export interface StopOf {
  stop_reason: StopReason;
  stop_sequence: string | null;
}

/** The Message for a non-streaming request. */
export function messagesResponse(body: Json, ids: TurnIds): Json {
  const choice = firstOf(body.choices);
  const message = isJson(choice?.message) ? choice.message : {};
  const content: Json[] = [];
  const reasoning = message.reasoning_content;
  if (typeof reasoning === 'string' && reasoning !== '')
    content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (typeof message.content === 'string' && message.content !== '')
    content.push({ type: 'text', text: message.content });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isJson) : [];
  calls.forEach((call, i) => {
    const fn = isJson(call.function) ? call.function : {};
    content.push({
      type: 'tool_use',
      id: typeof call.id === 'string' && call.id !== '' ? call.id : `toolu_${i}`,
      name: typeof fn.name === 'string' ? fn.name : '',
      input: toolInput(fn.arguments),
    });
  });
  const usage = isJson(body.usage) ? body.usage : {};
  return withIds(
    {
      id: messageId(body.id),
      type: 'message',
      role: 'assistant',
      model: typeof body.model === 'string' ? body.model : '',
      content,
      ...stopOf(choice?.finish_reason, matchedStop(choice), calls.length > 0),
      usage: {
        input_tokens: count(usage.prompt_tokens),
        output_tokens: count(usage.completion_tokens),
      },
    },
    ids,
  );
}

/**
 * The stop reason for a chat finish reason: `length` is `max_tokens`, a tool call `tool_use`, and a stop on a
 * string (the engine names the stop string it matched; on an end-of-text token it names the token id) is
 * `stop_sequence` with that string; any other stop is `end_turn`.
 */
export function stopOf(finishReason: unknown, matched: unknown, calledTools: boolean): StopOf {
  if (finishReason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (finishReason === 'tool_calls' || calledTools) return { stop_reason: 'tool_use', stop_sequence: null };
  if (typeof matched === 'string' && matched !== '')
    return { stop_reason: 'stop_sequence', stop_sequence: matched };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/** What stopped a choice: SGLang and the reference engine say `matched_stop`, vLLM `stop_reason`. */
export function matchedStop(choice: Json | undefined): unknown {
  return choice?.matched_stop ?? choice?.stop_reason ?? null;
}

/**
 * A tool call's arguments as a tool_use input: the JSON they hold; text that is not JSON is given as that
 * text (messages-to-chat.ts sends a string input back unchanged, so the turn pairs with its reply).
 */
export function toolInput(args: unknown): unknown {
  if (typeof args !== 'string') return args ?? {};
  if (args.trim() === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** `msg_` and the engine's completion id (without OpenAI's `chatcmpl-`). */
export function messageId(id: unknown): string {
  const raw = typeof id === 'string' && id !== '' ? id.replace(/^chatcmpl-/, '') : 'unknown';
  return `msg_${raw}`;
}

export function withIds(body: Json, ids: TurnIds): Json {
  const out = { ...body };
  if (ids.sessionId !== null) out.session_id = ids.sessionId;
  if (ids.turnId !== null) out.turn_id = ids.turnId;
  return out;
}

export function firstOf(choices: unknown): Json | undefined {
  const first = Array.isArray(choices) ? choices[0] : undefined;
  return isJson(first) ? first : undefined;
}

export function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}
