// What the client sees of the engine's answer: a normal OpenAI response with only the fields it asked for.
// The gateway adds log-probs, token ids and usage to main-turn requests for its own capture; they are
// removed here unless the client asked for them, and a top-level `session_id` is added (and, on a recorded main
// turn, its `turn_id`: what `POST /v1/feedback` names it by).

import type { ChatRequest } from './chat-request-schema.js';

export interface ClientWants {
  logprobs: boolean;
  promptTokenIds: boolean;
  tokenIds: boolean;
  /** `stream_options.include_usage`: the final usage-only chunk of a stream. */
  streamUsage: boolean;
}

export function clientWantsOf(request: ChatRequest): ClientWants {
  return {
    logprobs: request.logprobs === true,
    promptTokenIds: request.return_prompt_token_ids === true,
    tokenIds: request.return_token_ids === true,
    streamUsage: request.stream_options?.include_usage === true,
  };
}

type Json = Record<string, unknown>;

/** The non-streaming response for the client. */
export function clientResponse(
  body: Json,
  wants: ClientWants,
  sessionId: string | null,
  turnId: string | null = null,
): Json {
  const choices = Array.isArray(body.choices) ? body.choices.map((c) => trimChoice(c, wants)) : body.choices;
  const out = withSession({ ...body, choices }, sessionId);
  return turnId === null ? out : { ...out, turn_id: turnId };
}

/**
 * The last chunk of a recorded main turn's stream, before `[DONE]`: no choices (like a usage chunk), the
 * stream's id, model and time, with `session_id` and `turn_id`.
 */
export function turnIdChunk(last: Json | null, sessionId: string | null, turnId: string): Json {
  return withSession(
    {
      id: last?.id ?? null,
      object: 'chat.completion.chunk',
      created: last?.created ?? Math.floor(Date.now() / 1000),
      model: last?.model ?? null,
      choices: [],
      turn_id: turnId,
    },
    sessionId,
  );
}

/** The chunk for the client, or null when nothing the client asked for is left in it. */
export function clientChunk(chunk: Json, wants: ClientWants, sessionId: string | null): Json | null {
  const out: Json = { ...chunk };
  if (!wants.streamUsage) delete out.usage;
  const original = Array.isArray(chunk.choices) ? chunk.choices : [];
  const choices = original.map((c) => trimChoice(c, wants)).filter((c) => !isEmptyChoice(c));
  out.choices = choices;
  if (choices.length === 0 && (out.usage === undefined || out.usage === null)) return null;
  return withSession(out, sessionId);
}

function trimChoice(choice: unknown, wants: ClientWants): unknown {
  if (typeof choice !== 'object' || choice === null) return choice;
  const out: Json = { ...(choice as Json) };
  if (!wants.logprobs && 'logprobs' in out) out.logprobs = null;
  if (!wants.promptTokenIds) delete out.prompt_token_ids;
  if (!wants.tokenIds) delete out.token_ids;
  return out;
}

/** A stream choice that carries no text, no tool call, no finish reason and nothing the client asked for. */
function isEmptyChoice(choice: unknown): boolean {
  if (typeof choice !== 'object' || choice === null) return false;
  const c = choice as Json;
  const delta = c.delta;
  const emptyDelta =
    delta === undefined ||
    delta === null ||
    (typeof delta === 'object' && Object.keys(delta as Json).length === 0);
  return (
    emptyDelta &&
    (c.finish_reason === undefined || c.finish_reason === null) &&
    (c.logprobs === undefined || c.logprobs === null) &&
    c.token_ids === undefined &&
    c.prompt_token_ids === undefined
  );
}

function withSession(body: Json, sessionId: string | null): Json {
  return sessionId === null ? body : { ...body, session_id: sessionId };
}
