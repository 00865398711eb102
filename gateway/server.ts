// The gateway's HTTP server: an OpenAI-compatible proxy in front of the policy engine that records every main
// turn durably (its record and outbox entry in the sample store) before its response completes. `createGateway` builds one instance from its dependencies and
// keeps no global state, so tests run several side by side.

import rateLimit from '@fastify/rate-limit';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { LoggerOptions } from 'pino';
import type { EngineKind } from '../core/engine-kinds.js';
import { type ApiKey, LOCAL_TENANT } from '../core/tenant.js';
import type { AdapterSettings } from '../core/tenant-adapters.js';
import type { EngineAdapter } from '../engines/engine-adapter.js';
import { createEngineAdapter } from '../engines/engine-adapters.js';
import { type ApiKeyCheck, type Caller, createApiKeyCheck, credentialOf } from './auth.js';
import { chatCompletionsRoute } from './chat-completions-route.js';
import { chatProtocol } from './chat-protocol.js';
import type { ChatDeps } from './chat-turn.js';
import type { ClientProtocol } from './client-protocol.js';
import { clientSignalOf } from './client-signal.js';
import { DASHBOARD_PUBLIC_ROUTES, registerDashboard } from './dashboard/dashboard-routes.js';
import type { DashboardSources } from './dashboard/dashboard-sources.js';
import { ClientGoneError, EngineUpstream } from './engine-upstream.js';
import type { FeedbackDesk } from './feedback-desk.js';
import { FEEDBACK_ROUTE, feedbackHandler } from './feedback-route.js';
import type { IdempotencyKeys } from './idempotency.js';
import { DEFAULT_IMAGE_LIMITS, type ImageLimits } from './image-intake.js';
import { COUNT_TOKENS_ROUTE, countTokensHandler } from './messages/count-tokens-route.js';
import { messagesProtocol } from './messages/messages-protocol.js';
import { MESSAGES_ROUTE, messagesRoute } from './messages/messages-route.js';
import { GatewayMetrics } from './metrics.js';
import {
  internalError,
  invalidRequest,
  notFound,
  OpenAIError,
  payloadTooLarge,
  rateLimited,
} from './openai-errors.js';
import { type ProtocolRoute, protocolHandler, type RequestContext } from './protocol-route.js';
import { traceRequests } from './request-tracing.js';
import type { ResponseStates } from './responses/response-state.js';
import { RESPONSES_ROUTE, responsesRoute } from './responses/responses-route.js';
import { NEUTRAL_SAMPLING, type SamplingDefaults } from './sampling.js';
import { TenantRouting } from './tenant-routing.js';
import type { TurnRecorder } from './turn-recorder.js';

export interface GatewayOptions {
  /** Base URL of the policy engine, without `/v1`. */
  engineUrl: string;
  /** Which engine it is (default `reference`): its adapter speaks that engine's contract. */
  engineKind?: EngineKind;
  /** Headers of every engine call (the engine's bearer token, security/engine-token.ts). */
  engineHeaders?: Record<string, string>;
  /** Replaces the adapter built from `engineUrl` and `engineKind`. */
  engine?: EngineAdapter;
  recorder: TurnRecorder;
  /** Where `POST /v1/feedback` stores feedback; absent: the route answers 501 (no durable store). */
  feedback?: FeedbackDesk;
  /** Where `Idempotency-Key` responses are kept (the sample store, shared by every gateway). */
  idempotency: IdempotencyKeys;
  /** Sampling values sent when a client leaves them out (default: the engines' neutral ones). */
  sampling?: SamplingDefaults;
  /**
   * Bearer keys clients must send, each with its tenant (a bare key is its own tenant, named after it); empty
   * means an open gateway whose one tenant is `local` (a warning is logged; startGateway refuses that beyond
   * loopback unless `gateway.allowNoKeys`).
   */
  apiKeys?: readonly (string | ApiKey)[];
  /** Largest request body accepted; larger ones get 413. */
  bodyLimitBytes?: number;
  /**
   * Requests per minute per API key (per client address on an open gateway); more get 429 with
   * `retry-after`. 0 or absent: no limit.
   */
  rateLimitPerMinute?: number;
  /** Longest an engine request may take (streams included). Generous: weight swaps hold requests. */
  upstreamTimeoutMs?: number;
  /** Fastify/pino logger settings; false (the default) logs nothing. */
  logger?: boolean | LoggerOptions;
  /** Also export Node process metrics (CPU, memory, event loop) on /metrics. */
  processMetrics?: boolean;
  /** The metrics to export (default: new ones); startGateway shares them with its outbox relay. */
  metrics?: GatewayMetrics;
  /**
   * /metrics asks for an API key like the API does (Prometheus sends one with `authorization: credentials`).
   * startGateway sets it when the gateway has keys and listens beyond loopback: its figures (tenants' request
   * counts, outbox depth) are not for anyone who can reach the port.
   */
  metricsNeedKey?: boolean;
  /** Tenants with an adapter of their own: served by it, and nobody else is (gateway/tenant-routing.ts). */
  adapters?: AdapterSettings;
  /**
   * Where `POST /v1/responses` keeps conversations for `previous_response_id` (the sample store); absent: the
   * route is not served.
   */
  responses?: ResponseStates;
  /** Where the dashboard (`/dashboard`, docs/dashboard.md) reads runs and sessions; absent: no dashboard. */
  dashboard?: DashboardSources;
  /** What images a chat request may carry (default: data URLs only, gateway/image-intake.ts). */
  images?: ImageLimits;
}

export const DEFAULT_BODY_LIMIT_BYTES = 16 * 1024 * 1024;
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 15 * 60 * 1000;

const CHAT_ROUTE = '/v1/chat/completions';

const HEALTH_ROUTE = '/healthz';
const METRICS_ROUTE = '/metrics';

export function createGateway(options: GatewayOptions): FastifyInstance {
  const bodyLimit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const app = Fastify({ logger: options.logger ?? false, bodyLimit });
  traceRequests(app);
  const metrics = options.metrics ?? new GatewayMetrics({ processMetrics: options.processMetrics ?? false });
  const timeoutMs = options.upstreamTimeoutMs ?? DEFAULT_UPSTREAM_TIMEOUT_MS;
  const engine =
    options.engine ??
    createEngineAdapter(options.engineKind ?? 'reference', options.engineUrl, {
      timeoutMs,
      ...(options.engineHeaders && { headers: options.engineHeaders }),
    });
  const upstream = new EngineUpstream(engine, {
    timeoutMs,
    onError: (kind) => metrics.upstreamError(kind),
  });
  const routing = new TenantRouting(options.adapters ?? { tenants: [] }, engine);
  const auth = createApiKeyCheck(options.apiKeys ?? []);
  // Routes anyone may call: liveness for orchestrators (which says no more than that without a key), and metrics
  // for scrapers unless they need a key.
  const publicRoutes = new Set(options.metricsNeedKey ? [HEALTH_ROUTE] : [HEALTH_ROUTE, METRICS_ROUTE]);
  if (options.dashboard) for (const path of DASHBOARD_PUBLIC_ROUTES) publicRoutes.add(path);
  if (auth.open)
    app.log.warn(
      'NO API KEYS CONFIGURED: the gateway accepts every request without authentication. ' +
        'Create one with `openclaw-rl keys init` or set OPENCLAW_API_KEYS before exposing it beyond this machine.',
    );

  // An engine started in a way that breaks exact capture is said at start, not at the first turn.
  app.addHook('onReady', async () => {
    const problems = await engine.servingProblems(AbortSignal.timeout(5_000)).catch(() => []);
    for (const problem of problems) app.log.warn({ engine: engine.url }, problem);
  });

  // The routes clients send turns to, each answered in its own protocol; errors too (protocol-route.ts).
  const clientRoutes = new Map<string, ProtocolRoute>([[CHAT_ROUTE, chatCompletionsRoute]]);
  if (options.responses) clientRoutes.set(RESPONSES_ROUTE, responsesRoute(options.responses));
  clientRoutes.set(MESSAGES_ROUTE, messagesRoute);
  // Routes that carry no turn but speak a client's protocol: its errors, its key header.
  const otherProtocolRoutes = new Map<string, ClientProtocol>([[COUNT_TOKENS_ROUTE, messagesProtocol]]);
  const protocolOf = (request: FastifyRequest): ClientProtocol => {
    const url = request.routeOptions.url ?? '';
    return clientRoutes.get(url)?.protocol ?? otherProtocolRoutes.get(url) ?? chatProtocol;
  };

  const contexts = new WeakMap<FastifyRequest, RequestContext>();
  const contextOf = (request: FastifyRequest): RequestContext =>
    contexts.get(request) ?? { tenant: LOCAL_TENANT, keyName: '', startedAt: process.hrtime.bigint() };

  app.addHook('onRequest', async (request, reply) => {
    const startedAt = process.hrtime.bigint();
    observeRequest(metrics, request, reply, startedAt, clientRoutes.has(request.routeOptions.url ?? ''));
    // Anthropic clients send their key as `x-api-key`.
    const apiKeyHeader = protocolOf(request).name === 'messages';
    contexts.set(request, { ...authenticate(auth, publicRoutes, request, apiKeyHeader), startedAt });
  });

  const limit = options.rateLimitPerMinute ?? 0;
  if (limit > 0)
    // A fixed one-minute window per key, in this process (several gateways each count their own). It runs
    // after the key check, so unauthenticated requests never spend a key's budget.
    app.register(rateLimit, {
      max: limit,
      timeWindow: 60_000,
      keyGenerator: (request) => {
        const { keyName } = contextOf(request);
        return keyName ? `key:${keyName}` : `ip:${request.ip}`;
      },
      allowList: (request) => publicRoutes.has(request.url.split('?')[0] ?? ''),
      errorResponseBuilder: (_request, context) =>
        rateLimited(context.max, Math.max(1, Math.ceil(context.ttl / 1000))),
    });

  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    if (error instanceof ClientGoneError) {
      metrics.clientDisconnects.inc();
      request.log.info('client disconnected before the response; nothing recorded');
      return reply.code(499).send();
    }
    const openai = toOpenAIError(error, bodyLimit);
    if (openai.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(reply, openai, protocolOf(request));
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, notFound(`no route for ${request.method} ${request.url.split('?')[0]}`), chatProtocol),
  );

  // Registered as a plugin so that it loads after the rate limiter, whose hook attaches to routes as they are added.
  app.register(async (routes) => {
    routes.get(HEALTH_ROUTE, async (request) => {
      const reachable = await upstream.reachable();
      // Where the engine is and what it is only for a caller with a key (or on an open gateway, which only
      // listens beyond loopback when its operator said so): a scanner learns that the gateway is up, no more.
      if (!auth.open && auth.check(request.headers.authorization).ok !== true)
        return { ok: true, engine: { reachable } };
      return { ok: true, engine: { url: upstream.baseUrl, kind: engine.kind, reachable } };
    });

    routes.get(METRICS_ROUTE, async (_request, reply) => {
      reply.type(metrics.registry.contentType);
      return metrics.registry.metrics();
    });

    // The engine's own list: the gateway serves whatever model the engine serves, but no tenant's adapter
    // to anyone else.
    routes.get('/v1/models', async (request, reply) =>
      routing.visibleModels(contextOf(request).tenant, await upstream.models(clientSignalOf(reply))),
    );

    const chatDeps: ChatDeps = {
      upstream,
      recorder: options.recorder,
      metrics,
      sampling: options.sampling ?? NEUTRAL_SAMPLING,
      idempotency: options.idempotency,
      routing,
      images: options.images ?? DEFAULT_IMAGE_LIMITS,
    };
    for (const [path, route] of clientRoutes) routes.post(path, protocolHandler(chatDeps, contextOf, route));
    routes.post(COUNT_TOKENS_ROUTE, countTokensHandler(upstream));

    routes.post(FEEDBACK_ROUTE, feedbackHandler(options.feedback ?? null, contextOf));

    if (options.dashboard) registerDashboard(routes, options.dashboard, contextOf);
  });

  return app;
}

/**
 * Checks the bearer key (or, where `apiKeyHeader`, an `x-api-key`) on every non-public route (before the body is
 * read); returns who is calling.
 */
function authenticate(
  auth: ApiKeyCheck,
  publicRoutes: ReadonlySet<string>,
  request: FastifyRequest,
  apiKeyHeader: boolean,
): Caller {
  const path = request.url.split('?')[0] ?? '';
  if (publicRoutes.has(path)) return { tenant: LOCAL_TENANT, keyName: '' };
  const result = auth.check(credentialOf(request.headers, apiKeyHeader));
  if (!result.ok) throw result.error;
  return { tenant: result.tenant, keyName: result.keyName };
}

/** Counts the request once its connection is done with it: finished, failed or abandoned (status 499). */
function observeRequest(
  metrics: GatewayMetrics,
  request: FastifyRequest,
  reply: FastifyReply,
  startedAt: bigint,
  /** A turn for the engine (any client protocol): counted as a chat request in flight. */
  chat: boolean,
): void {
  metrics.inFlight.inc();
  if (chat) metrics.chatStarted();
  reply.raw.once('close', () => {
    metrics.inFlight.dec();
    if (chat) metrics.chatEnded();
    const route = request.routeOptions.url ?? 'unmatched';
    const status = reply.raw.writableFinished ? String(reply.raw.statusCode) : '499';
    metrics.requests.inc({ route, status });
    metrics.requestDuration.observe({ route }, Number(process.hrtime.bigint() - startedAt) / 1e9);
  });
}

/** Fastify's own errors (body parser, limits) as OpenAI errors; anything unexpected is a 500. */
function toOpenAIError(error: FastifyError | Error, bodyLimit: number): OpenAIError {
  if (error instanceof OpenAIError) return error;
  const code = 'code' in error ? error.code : undefined;
  const status = 'statusCode' in error && typeof error.statusCode === 'number' ? error.statusCode : 500;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return payloadTooLarge(bodyLimit);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return invalidRequest(
        'malformed JSON body: the request body is not valid JSON',
        'body',
        'invalid_json',
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidRequest('the request body is empty; a JSON object is required', 'body', 'invalid_json');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new OpenAIError(
        415,
        'unsupported content-type; send application/json',
        'invalid_request_error',
        'content-type',
        'unsupported_media_type',
      );
  }
  if (status === 413) return payloadTooLarge(bodyLimit);
  if (status >= 400 && status < 500)
    return new OpenAIError(status, error.message, 'invalid_request_error', null, code ?? null);
  return internalError(`internal error: ${error.message}`);
}

function sendError(reply: FastifyReply, error: OpenAIError, protocol: ClientProtocol): FastifyReply {
  if (error.retryAfterSeconds !== null) reply.header('retry-after', String(error.retryAfterSeconds));
  const { status, body } = protocol.error(error);
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}
