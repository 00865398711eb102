// The pipeline every client route shares: validate and translate the client's request into a chat request,
// identify the session and turn type, forward to the engine, and answer in the client's protocol
// (client-protocol.ts). A non-streaming main turn is recorded before the body is sent; if that fails the
// client gets a 503 to retry instead of a response whose turn could be lost. A request with an
// `Idempotency-Key` already answered gets that answer again, byte for byte, and the engine is not asked twice.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { identifySession } from '../core/session-id.js';
import { clientSessionId } from '../core/tenant.js';
import { TurnCapture } from '../engines/chat-capture.js';
import { engineChatResponseSchema } from '../engines/chat-schema.js';
import type { Caller } from './auth.js';
import type { ChatRequest } from './chat-request-schema.js';
import {
  answerNamesWeightVersion,
  type ChatDeps,
  type ChatTurn,
  endSessionIfAsked,
  engineRequestBody,
  keepForReplay,
  prepareMainTurn,
  recordMainTurn,
} from './chat-turn.js';
import type { ClientProtocol } from './client-protocol.js';
import { clientWantsOf } from './client-response.js';
import { clientSignalOf } from './client-signal.js';
import { ClientGoneError } from './engine-upstream.js';
import {
  IDEMPOTENT_REPLAYED_HEADER,
  type IdempotencyClaim,
  idempotencyKeyOf,
  requestFingerprint,
  type StoredResponse,
} from './idempotency.js';
import { takeImages } from './image-intake.js';
import { badGateway, OpenAIError, serviceUnavailable } from './openai-errors.js';
import { explicitSampling } from './sampling.js';
import { relayStream } from './stream-relay.js';
import type { TenantRoute } from './tenant-routing.js';

/**
 * What the gateway learnt about a request before its handler ran: who sent it (session ids and
 * Idempotency-Keys are scoped by its tenant) and when.
 */
export interface RequestContext extends Caller {
  startedAt: bigint;
}

/** A client request understood: the chat request the pipeline handles and the protocol that answers it. */
export interface TranslatedRequest {
  chat: ChatRequest;
  /** Default: the route's protocol. */
  protocol?: ClientProtocol;
}

/** What a client route supplies to the shared pipeline. */
export interface ProtocolRoute {
  /** Answers this route's errors, and its requests unless `toChat` names a protocol of their own. */
  protocol: ClientProtocol;
  /**
   * The client's raw body as a chat request; throws an OpenAIError (a 4xx naming the bad field) when it is
   * not one the gateway can serve.
   */
  toChat(body: unknown, context: RequestContext): TranslatedRequest | Promise<TranslatedRequest>;
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** The handler of a client route: its requests translated to chat, served by the shared pipeline. */
export function protocolHandler(
  deps: ChatDeps,
  contextOf: (request: FastifyRequest) => RequestContext,
  client: ProtocolRoute,
) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const context = contextOf(request);
    const translated = await client.toChat(request.body, context);
    const chat = translated.chat;
    const protocol = translated.protocol ?? client.protocol;
    const idempotencyKey = idempotencyKeyOf(request.headers);
    const clientSignal = clientSignalOf(reply);
    // Images checked (and fetched) before anything is claimed: a refused image leaves the key free. Identity
    // and the key's fingerprint see images as digests, never as bytes or the URL they came from.
    const images = await takeImages(chat.messages, deps.images, clientSignal);
    const hasImages = images.images.size > 0;
    const withRefs = hasImages ? { ...chat, messages: images.refMessages } : chat;
    const identity = identifySession(
      { headers: request.headers, body: withRefs },
      { tenant: context.tenant },
    );
    const main = identity.source !== 'none' && identity.turnType === 'main';

    let claim: IdempotencyClaim | null = null;
    if (idempotencyKey !== null) {
      const fingerprint = requestFingerprint({
        body: hasImages ? fingerprintBodyWithImages(request.body, protocol, withRefs) : request.body,
        // A derived id is a function of the body and tenant; the form it had before keeps keys taken then valid.
        sessionId: identity.source === 'derived' ? identity.legacySessionId : identity.sessionId,
        turnType: identity.turnType,
        sessionDone: identity.sessionDone,
      });
      const started = await beginIdempotent(deps, context.tenant, idempotencyKey, fingerprint);
      if (started.kind === 'replay') {
        deps.metrics.idempotentReplays.inc();
        request.log.info({ sessionId: identity.sessionId }, 'replayed the response of an Idempotency-Key');
        return sendReplay(reply, started.response);
      }
      claim = started.claim;
    }

    let route: TenantRoute;
    try {
      route = await routeOf(deps, context.tenant, chat.model, clientSignal);
    } catch (error) {
      // Refused (another tenant's adapter) or the engine unreachable: the key is free for the retry.
      await claim?.releaseUnlessCompleted().catch(() => undefined);
      throw error;
    }
    const { model, own } = route;

    deps.metrics.turns.inc({ turn_type: main ? 'main' : 'side' });
    const sampling = explicitSampling(chat, deps.sampling);
    const engine = deps.upstream.engine;
    // Read before the engine is asked, so the version recorded is never newer than the one that answered.
    const versionBefore =
      main && !answerNamesWeightVersion(engine, chat.stream === true)
        ? await deps.upstream.currentWeightVersion(clientSignal).catch(() => null)
        : null;
    const turn: ChatTurn = {
      request: chat,
      protocol,
      identity,
      main,
      wants: clientWantsOf(chat),
      sampling,
      idempotency: claim,
      engineBody: withModel(
        engineRequestBody(engine, { ...chat, messages: images.engineMessages }, main, sampling),
        model,
      ),
      images,
      versionBefore,
      route: own,
      prepared: null,
      clientSignal,
      startedAt: context.startedAt,
      log: request.log.child({ sessionId: identity.sessionId, turnType: main ? 'main' : 'side' }),
    };
    // Looked up while the engine answers: after the answer only the record's own write is left.
    turn.prepared = prepareMainTurn(deps, turn);
    try {
      if (chat.stream) await relayStream(deps, turn, reply);
      else await answerOnce(deps, turn, reply);
    } finally {
      // A request that did not complete frees its key, so the client's retry is answered afresh.
      await claim?.releaseUnlessCompleted().catch((error: unknown) => {
        turn.log.warn(
          { err: error },
          'Idempotency-Key could not be released; it frees itself when its lease ends',
        );
      });
    }
  };
}

/** The tenant's own policy, if it has one (a request naming another tenant's adapter is refused here). */
async function routeOf(
  deps: ChatDeps,
  tenant: string,
  model: string | undefined,
  signal: AbortSignal,
): Promise<TenantRoute> {
  if (!deps.routing?.enabled) return { model: null, own: null };
  try {
    return await deps.routing.route(tenant, model, signal);
  } catch (error) {
    throw deps.upstream.failure(error, signal);
  }
}

/**
 * What an Idempotency-Key's fingerprint hashes for a request with images: chat's own body with its messages as
 * digest refs; another protocol's request as the chat request it became (its images as refs too).
 */
function fingerprintBodyWithImages(body: unknown, protocol: ClientProtocol, chat: ChatRequest): unknown {
  if (protocol.name === 'chat') return { ...(body as object), messages: chat.messages };
  return { protocol: protocol.name, chat };
}

function withModel(body: Record<string, unknown>, model: string | null): Record<string, unknown> {
  return model ? { ...body, model } : body;
}

async function beginIdempotent(deps: ChatDeps, tenant: string, key: string, fingerprint: string) {
  try {
    return await deps.idempotency.begin({ scope: tenant, key, fingerprint });
  } catch (error) {
    if (error instanceof OpenAIError) throw error;
    throw serviceUnavailable(
      `the Idempotency-Key record could not be read: ${String(error)}`,
      'idempotency_unavailable',
    );
  }
}

function sendReplay(reply: FastifyReply, response: StoredResponse): FastifyReply {
  return reply
    .code(response.status)
    .header('content-type', response.contentType)
    .header(IDEMPOTENT_REPLAYED_HEADER, 'true')
    .send(response.body);
}

async function answerOnce(deps: ChatDeps, turn: ChatTurn, reply: FastifyReply): Promise<void> {
  const response = await deps.upstream.chatCompletions(turn.engineBody, turn.clientSignal);
  const raw = await deps.upstream.json(response, turn.clientSignal);
  const engineDone = performance.now();
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw badGateway('the policy engine returned a response that is not a JSON object', 'upstream_failed');
  const body = deps.upstream.engine.canonicalResponse(raw as Record<string, unknown>);
  let recorded: Awaited<ReturnType<typeof recordMainTurn>> | null = null;
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
    recorded = await recordMainTurn(deps, turn, TurnCapture.fromResponse(parsed.data));
  }
  const sessionId = recorded?.ref.sessionId ?? turn.identity.sessionId;
  await endSessionIfAsked(deps, turn, sessionId);
  // Serialised here, once, so a replay sends exactly these bytes.
  const turnId = recorded ? clientSessionId(recorded.ref.sampleId) : null;
  const text = JSON.stringify(
    await turn.protocol.response(body, { wants: turn.wants, sessionId: clientSessionId(sessionId), turnId }),
  );
  await keepForReplay(turn, { status: 200, contentType: JSON_CONTENT_TYPE, body: text }, recorded);
  await reply.code(200).header('content-type', JSON_CONTENT_TYPE).send(text);
  deps.metrics.turnAnswered({
    turnType: turn.main ? 'main' : 'side',
    afterEngineMs: performance.now() - engineDone,
    recordMs: recorded?.recordMs ?? null,
  });
}
