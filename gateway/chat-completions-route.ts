// POST /v1/chat/completions: validate, identify the session and turn type, forward to the engine, and
// answer. A non-streaming main turn is recorded before the JSON is sent; if that fails the client gets a
// 503 to retry instead of a response whose turn could be lost.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { identifySession } from '../core/session-id.js';
import { TurnCapture } from '../engines/chat-capture.js';
import { engineChatResponseSchema } from '../engines/chat-schema.js';
import { parseChatRequest } from './chat-request-schema.js';
import {
  answerNamesWeightVersion,
  type ChatDeps,
  type ChatTurn,
  endSessionIfAsked,
  engineRequestBody,
  recordMainTurn,
} from './chat-turn.js';
import { clientResponse, clientWantsOf } from './client-response.js';
import { clientSignalOf } from './client-signal.js';
import { ClientGoneError } from './engine-upstream.js';
import { badGateway } from './openai-errors.js';
import { relayStream } from './stream-relay.js';

/** What the gateway learnt about a request before its handler ran. */
export interface RequestContext {
  /** Names the caller's API key; keeps derived session ids of different keys apart. */
  scope: string;
  startedAt: bigint;
}

export function chatCompletionsHandler(
  deps: ChatDeps,
  contextOf: (request: FastifyRequest) => RequestContext,
) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const parsed = parseChatRequest(request.body);
    if (!parsed.ok) throw parsed.error;
    const chat = parsed.request;
    const context = contextOf(request);
    const identity = identifySession({ headers: request.headers, body: chat }, { scope: context.scope });
    const main = identity.sessionId !== null && identity.turnType === 'main';
    deps.metrics.turns.inc({ turn_type: main ? 'main' : 'side' });
    const engine = deps.upstream.engine;
    const clientSignal = clientSignalOf(reply);
    // Read before the engine is asked, so the version recorded is never newer than the one that answered.
    const versionBefore =
      main && !answerNamesWeightVersion(engine, chat.stream === true)
        ? await deps.upstream.currentWeightVersion(clientSignal).catch(() => null)
        : null;
    const turn: ChatTurn = {
      request: chat,
      identity,
      main,
      wants: clientWantsOf(chat),
      engineBody: engineRequestBody(engine, chat, main),
      versionBefore,
      clientSignal,
      startedAt: context.startedAt,
      log: request.log.child({ sessionId: identity.sessionId, turnType: main ? 'main' : 'side' }),
    };
    if (chat.stream) await relayStream(deps, turn, reply);
    else await answerOnce(deps, turn, reply);
  };
}

async function answerOnce(deps: ChatDeps, turn: ChatTurn, reply: FastifyReply): Promise<void> {
  const response = await deps.upstream.chatCompletions(turn.engineBody, turn.clientSignal);
  const raw = await deps.upstream.json(response, turn.clientSignal);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw badGateway('the policy engine returned a response that is not a JSON object', 'upstream_failed');
  const body = deps.upstream.engine.canonicalResponse(raw as Record<string, unknown>);
  if (turn.main) {
    const parsed = engineChatResponseSchema.safeParse(body);
    if (!parsed.success) {
      deps.metrics.upstreamError('server_error');
      throw badGateway(
        `the policy engine returned a malformed response: ${parsed.error.issues[0]?.message}`,
        'upstream_failed',
      );
    }
    // Nobody is waiting for this response any more: record nothing.
    if (turn.clientSignal.aborted) throw new ClientGoneError();
    await recordMainTurn(deps, turn, TurnCapture.fromResponse(parsed.data));
  }
  await endSessionIfAsked(deps, turn);
  await reply.send(clientResponse(body, turn.wants, turn.identity.sessionId));
}
