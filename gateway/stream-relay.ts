// Streaming answers: each engine chunk is relayed to the client as it arrives, in the client's protocol
// (client-protocol.ts), and captured. The closing events come only after a main turn is recorded, and the
// very last (chat's `data: [DONE]`) only once the response is kept for replay; if recording fails the client
// gets an error event and the stream ends without it, so a client that saw it can count on its turn. A
// client that disconnects aborts the engine request, and nothing is recorded. Under an `Idempotency-Key` the
// events sent are kept as they were written, and stored (with the last one) before the last one goes out.

import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { clientSessionId } from '../core/tenant.js';
import { TurnCapture } from '../engines/chat-capture.js';
import { engineChatChunkSchema } from '../engines/chat-schema.js';
import {
  type ChatDeps,
  type ChatTurn,
  endSessionIfAsked,
  keepForReplay,
  recordMainTurn,
} from './chat-turn.js';
import { parseSseEvents } from './engine-stream.js';
import { ClientGoneError } from './engine-upstream.js';
import { badGateway, internalError, OpenAIError } from './openai-errors.js';

const SSE_CONTENT_TYPE = 'text/event-stream; charset=utf-8';

export async function relayStream(deps: ChatDeps, turn: ChatTurn, reply: FastifyReply): Promise<void> {
  // Errors before the engine answers (unreachable, 4xx) are thrown here and sent as plain JSON errors.
  const upstream = await deps.upstream.chatCompletions(turn.engineBody, turn.clientSignal);
  const body = upstream.body;
  if (body === null) throw badGateway('the policy engine sent an empty stream', 'upstream_failed');

  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': SSE_CONTENT_TYPE,
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.flushHeaders();

  const capture = new TurnCapture();
  // A conversation's first request has no derived id until its reply is complete: its chunks name none.
  const sessionId = clientSessionId(turn.identity.sessionId);
  // What the client was sent, event by event, when a replay may need it.
  const sent: string[] | null = turn.idempotency ? [] : null;
  const encoder = turn.protocol.stream({ wants: turn.wants, sessionId });
  const writeEvents = async (events: string[]) => {
    for (const event of events) await writeSseEvent(raw, event, sent);
  };
  const endWithError = async (error: OpenAIError) => {
    await writeEvents(encoder.error(error.toJSON()));
    raw.end();
  };
  let sawDone = false;
  let sawToken = false;
  let lastChunk: Record<string, unknown> | null = null;
  try {
    for await (const event of parseSseEvents(body)) {
      if (event.data === '[DONE]') {
        sawDone = true;
        break;
      }
      const chunk = deps.upstream.engine.canonicalChunk(parseChunk(event.data));
      if (chunk.error !== undefined) {
        // The engine failed mid-stream and said so: pass its error on, record nothing.
        deps.metrics.upstreamError('stream');
        turn.log.warn({ error: chunk.error }, 'the engine reported an error mid-stream');
        await writeEvents(encoder.error({ error: chunk.error }));
        raw.end();
        return;
      }
      if (turn.main) capture.addChunk(parseCapturedChunk(chunk));
      lastChunk = chunk;
      if (!sawToken && carriesToken(chunk)) {
        sawToken = true;
        deps.metrics.timeToFirstToken.observe(secondsSince(turn.startedAt));
      }
      await writeEvents(encoder.chunk(chunk));
    }
  } catch (error) {
    await body.cancel().catch(() => {});
    const failure = deps.upstream.failure(error, turn.clientSignal);
    if (failure instanceof ClientGoneError) return clientGone(deps, turn);
    deps.metrics.upstreamError('stream');
    turn.log.warn({ err: failure }, 'the engine stream failed');
    return endWithError(asOpenAIError(failure));
  }
  if (turn.clientSignal.aborted) return clientGone(deps, turn);
  if (!sawDone) {
    deps.metrics.upstreamError('stream');
    return endWithError(
      badGateway('the policy engine ended the stream before it was complete', 'upstream_failed'),
    );
  }

  const engineDone = performance.now();
  let recordMs: number | null = null;
  let last: string;
  try {
    const recorded = turn.main ? await recordMainTurn(deps, turn, capture) : null;
    recordMs = recorded?.recordMs ?? null;
    await endSessionIfAsked(deps, turn, recorded?.ref.sessionId ?? turn.identity.sessionId);
    // The turn's id, once it is recorded, goes in the closing events: feedback names the turn by it.
    const closing = await encoder.finish(lastChunk, {
      sessionId: clientSessionId(recorded?.ref.sessionId ?? turn.identity.sessionId),
      turnId: recorded ? (clientSessionId(recorded.ref.sampleId) ?? recorded.ref.sampleId) : null,
    });
    last = closing.pop() ?? '';
    await writeEvents(closing);
    if (sent !== null)
      await keepForReplay(
        turn,
        { status: 200, contentType: SSE_CONTENT_TYPE, body: sent.join('') + last },
        recorded,
      );
  } catch (error) {
    return endWithError(asOpenAIError(error));
  }
  raw.end(last);
  deps.metrics.turnAnswered({
    turnType: turn.main ? 'main' : 'side',
    afterEngineMs: performance.now() - engineDone,
    recordMs,
  });
}

function parseChunk(data: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw badGateway(
      `the policy engine sent a chunk that is not JSON: ${data.slice(0, 200)}`,
      'upstream_failed',
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw badGateway('the policy engine sent a chunk that is not a JSON object', 'upstream_failed');
  return parsed as Record<string, unknown>;
}

function parseCapturedChunk(chunk: Record<string, unknown>) {
  const parsed = engineChatChunkSchema.safeParse(chunk);
  if (!parsed.success)
    throw badGateway(
      `the policy engine sent a malformed chunk: ${parsed.error.issues[0]?.message ?? ''}`,
      'upstream_failed',
    );
  return parsed.data;
}

/** A chunk with generated text, a tool call or sampled token ids: the first one marks time to first token. */
function carriesToken(chunk: Record<string, unknown>): boolean {
  const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
  return choices.some((choice: unknown) => {
    if (typeof choice !== 'object' || choice === null) return false;
    const c = choice as { delta?: Record<string, unknown>; token_ids?: unknown };
    if (Array.isArray(c.token_ids) && c.token_ids.length > 0) return true;
    const delta = c.delta ?? {};
    return Boolean(delta.content || delta.reasoning_content || delta.tool_calls);
  });
}

function clientGone(deps: ChatDeps, turn: ChatTurn): void {
  deps.metrics.clientDisconnects.inc();
  turn.log.info('client disconnected mid-stream; nothing recorded');
}

/**
 * Writes one SSE event (and notes it in `sent`), waiting for the socket to drain when the client reads slower
 * than the engine.
 */
function writeSseEvent(raw: ServerResponse, event: string, sent: string[] | null): Promise<void> {
  if (raw.destroyed || raw.writableEnded) return Promise.resolve();
  sent?.push(event);
  if (raw.write(event)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.once('drain', done);
    raw.once('close', done);
  });
}

function asOpenAIError(error: unknown): OpenAIError {
  return error instanceof OpenAIError ? error : internalError(String(error));
}

function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}
