// A client protocol: how the engine's canonical chat answer becomes what one kind of client reads. Every client
// route (chat completions, the Responses API, Anthropic messages) turns its request into the chat request the
// gateway's pipeline handles (session identity, exact capture, recording, Idempotency-Key); the protocol turns
// the answer back. The pipeline decides when things are sent: a stream's closing events go out only after its
// main turn is recorded, and under an Idempotency-Key exactly the events sent are kept for replay.

import type { ClientWants } from './client-response.js';
import type { OpenAIError } from './openai-errors.js';

type Json = Record<string, unknown>;

/** What a protocol knows of the turn when it encodes an answer (ids in the client's form, without tenant). */
export interface ProtocolView {
  wants: ClientWants;
  /** The session's id; null for a conversation's first request whose id is derived from its reply. */
  sessionId: string | null;
}

export interface ClientProtocol {
  readonly name: 'chat' | 'responses' | 'messages';
  /**
   * The non-streaming body the client gets, from the engine's canonical chat response. Called once the main
   * turn is recorded (`turnId` set) or known to be a side turn, before the body is kept for replay; it may
   * keep what the protocol itself needs (the Responses API's stored conversation), and throwing fails the
   * request.
   */
  response(body: Json, view: ProtocolView & { turnId: string | null }): Promise<Json>;
  /** One encoder per streamed request. */
  stream(view: ProtocolView): ProtocolStream;
  /** An error as this protocol's clients expect it: the status and JSON body. */
  error(error: OpenAIError): { status: number; body: Json };
}

/** Encodes one stream: each result is whole SSE events (`event:` lines allowed), written in order. */
export interface ProtocolStream {
  /** The events for one canonical engine chunk (none when nothing in it is for the client). */
  chunk(chunk: Json): string[];
  /**
   * The closing events, once the engine's stream ended and its main turn is recorded (`turnId` set) or known
   * to be a side turn; the last one is held back until the response is kept for replay, so a client that saw
   * it can count on its turn. Like `response`, it may keep state and throw.
   */
  finish(last: Json | null, ids: { sessionId: string | null; turnId: string | null }): Promise<string[]>;
  /** The events that end a stream that failed (`{error: …}` in OpenAI's shape, or the engine's own error). */
  error(body: { error: unknown }): string[];
}

/** One SSE event: `data:` with the payload as JSON, after an `event:` line when named. */
export function sseEvent(payload: unknown, event?: string): string {
  const data = `data: ${JSON.stringify(payload)}\n\n`;
  return event === undefined ? data : `event: ${event}\n${data}`;
}
