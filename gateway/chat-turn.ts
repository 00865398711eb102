// One chat-completions request as the gateway handles it: what it is (main or side turn, which session),
// what goes to the engine, and the durable hand-off of a main turn before its response completes.

import type { FastifyBaseLogger } from 'fastify';
import { type ChatMessage, normaliseMessagesForTemplate } from '../core/chat-messages.js';
import { olderWeightVersion, parsePolicyVersion } from '../core/policy-version.js';
import { type SessionIdentification, stripSessionFields } from '../core/session-id.js';
import type { TurnCapture } from '../engines/chat-capture.js';
import type { EngineAdapter } from '../engines/engine-adapter.js';
import type { ChatRequest } from './chat-request-schema.js';
import type { ClientProtocol } from './client-protocol.js';
import type { ClientWants } from './client-response.js';
import type { EngineUpstream } from './engine-upstream.js';
import type { IdempotencyClaim, IdempotencyKeys, StoredResponse } from './idempotency.js';
import type { ImageLimits, TakenImages } from './image-intake.js';
import type { GatewayMetrics } from './metrics.js';
import { badGateway, OpenAIError, serviceUnavailable } from './openai-errors.js';
import type { ExplicitSampling, SamplingDefaults } from './sampling.js';
import type { AdapterRoute, TenantRouting } from './tenant-routing.js';
import type { PreparedTurn, RecordedTurn, TurnRecorder, TurnRequest } from './turn-recorder.js';

export interface ChatDeps {
  upstream: EngineUpstream;
  recorder: TurnRecorder;
  metrics: GatewayMetrics;
  /** What the gateway sends for sampling fields a client leaves out. */
  sampling: SamplingDefaults;
  idempotency: IdempotencyKeys;
  /** Which policy serves each tenant (absent: the engine's one policy serves everyone). */
  routing?: TenantRouting;
  /** What images a request may carry, and from where (gateway/image-intake.ts). */
  images: ImageLimits;
}

export interface ChatTurn {
  request: ChatRequest;
  /** How the client reads the answer (chat completions, Responses API…). */
  protocol: ClientProtocol;
  identity: SessionIdentification;
  /** A main turn of a known session: captured exactly and recorded. */
  main: boolean;
  wants: ClientWants;
  /** The sampling parameters sent to the engine, all explicit, and what the record keeps of them. */
  sampling: ExplicitSampling;
  /** The request's hold on its `Idempotency-Key`, if it sent one: completed with the response it is sent. */
  idempotency: IdempotencyClaim | null;
  /** The body sent to the engine. */
  engineBody: Record<string, unknown>;
  /** The request's images: its messages with digest refs (what is recorded), and their bytes (stored first). */
  images: TakenImages;
  /**
   * For a main turn on an engine whose answer does not name its weight version: the version read just
   * before the engine was asked (null when it could not be read). The turn records the older of it and
   * the version read after the answer.
   */
  versionBefore: string | null;
  /**
   * For a tenant with an adapter of its own: what serves it (its adapter, or the base before its run published
   * one), and that policy's version read before the engine was asked. Its turns record that version.
   */
  route: AdapterRoute | null;
  /**
   * For a main turn: its identity and the turn it continues, looked up while the engine answers
   * (`TurnRecorder.prepare`); null when the recorder does not prepare.
   */
  prepared: PreparedTurn | null;
  /** Aborted when the client disconnects before its response completed. */
  clientSignal: AbortSignal;
  /** `process.hrtime.bigint()` when the request arrived. */
  startedAt: bigint;
  log: FastifyBaseLogger;
}

/**
 * The client's body without session fields and with every sampling parameter explicit, in the engine's
 * spelling; for a main turn, plus the engine's exact-token extensions and, when streaming, usage in the stream
 * (the client's own choices are restored in what it sees).
 */
export function engineRequestBody(
  engine: EngineAdapter,
  request: ChatRequest,
  main: boolean,
  sampling: ExplicitSampling,
): Record<string, unknown> {
  const body: Record<string, unknown> = { ...stripSessionFields(request), ...sampling.engineFields };
  if (main && request.stream)
    body.stream_options = { ...(request.stream_options ?? {}), include_usage: true };
  return engine.chatBody(body, { capture: main });
}

/** Whether a main turn's answer will name its weight version, or the gateway must read it around the call. */
export function answerNamesWeightVersion(engine: EngineAdapter, stream: boolean): boolean {
  const named = engine.features.weightVersionInResponse;
  return stream ? named.stream : named.nonStream;
}

/**
 * The version of a tenant's own policy that served a turn: 0 for the base (its adapter run's version 0 is the
 * base: a fresh adapter adds nothing); the adapter's, as the answer names it (the reference engine), else the
 * older of the reads before and after the answer (vLLM names none; its adapter's folder says which).
 */
async function routedVersion(deps: ChatDeps, route: AdapterRoute, named: number | null): Promise<number> {
  if (route.adapter === null) return 0;
  if (named !== null) return named;
  const after = await deps.routing?.adapterVersion(route.adapter, AbortSignal.timeout(10_000));
  return after === null || after === undefined ? route.versionBefore : Math.min(route.versionBefore, after);
}

/** What a main turn's record takes from its request: its session, its messages as recorded, its tools. */
export function turnRequestOf(turn: Pick<ChatTurn, 'images' | 'request'>, sessionId: string): TurnRequest {
  return {
    sessionId,
    messages: normaliseMessagesForTemplate(turn.images.refMessages as ChatMessage[]),
    tools: turn.request.tools ?? null,
  };
}

/**
 * Begins a main turn's lookup (its identity, the turn it continues) so that it runs while the engine answers;
 * null for a side turn or a recorder that does not prepare.
 */
export function prepareMainTurn(
  deps: ChatDeps,
  turn: Pick<ChatTurn, 'images' | 'request' | 'identity' | 'main'>,
): PreparedTurn | null {
  const { identity } = turn;
  if (!turn.main || identity.source === 'none' || !deps.recorder.prepare) return null;
  const legacySessionId = identity.source === 'derived' ? identity.legacySessionId : null;
  return deps.recorder.prepare(turnRequestOf(turn, identity.sessionId), { legacySessionId });
}

/**
 * Writes the turn to the sample store and hands it to its session workflow. Throws the error the client
 * should get when that fails: the response must not complete without its turn.
 */
export async function recordMainTurn(
  deps: ChatDeps,
  turn: ChatTurn,
  capture: TurnCapture,
): Promise<RecordedTurn & { recordMs: number }> {
  const captured = capture.finish();
  if (!captured.ok) {
    deps.metrics.recordFailures.inc();
    turn.log.error({ problem: captured.problem }, 'main turn not recorded: engine output incomplete');
    throw badGateway(`the turn could not be recorded exactly: ${captured.problem}`, 'engine_missing_tokens');
  }
  const { response, promptIds, responseIds, responseLogProbs, finishReason } = captured.turn;
  const { identity } = turn;
  if (identity.source === 'none') throw new Error('recordMainTurn needs a session');
  const { sessionId } = identity;
  const legacySessionId = identity.source === 'derived' ? identity.legacySessionId : null;
  try {
    const policyVersion = turn.route
      ? await routedVersion(deps, turn.route, captured.turn.policyVersion)
      : (captured.turn.policyVersion ??
        parsePolicyVersion(
          olderWeightVersion(
            turn.versionBefore,
            await deps.upstream.currentWeightVersion(AbortSignal.timeout(10_000)),
          ),
        ));
    if (policyVersion === null) throw new Error('the engine reports no weight version');
    const recordStarted = performance.now();
    const request = turn.prepared?.request ?? turnRequestOf(turn, sessionId);
    const recorded = await deps.recorder.record(
      {
        sessionId,
        model: captured.turn.model || turn.request.model || '',
        messages: request.messages,
        tools: request.tools,
        response,
        promptIds,
        responseIds,
        responseLogProbs,
        policyVersion,
        finishReason,
        sampling: turn.sampling.record,
        chatTemplateKwargs: turn.request.chat_template_kwargs ?? null,
      },
      { legacySessionId, images: turn.images.images, prepared: turn.prepared },
    );
    const recordMs = performance.now() - recordStarted;
    deps.metrics.turnRecorded(recorded.duplicate ? 'duplicate' : 'recorded', recorded.pairing);
    turn.log.info(
      {
        sampleId: recorded.ref.sampleId,
        duplicate: recorded.duplicate,
        pairing: recorded.pairing,
        continues: recorded.ref.continues?.sampleId ?? null,
        tokens: responseIds.length,
      },
      'main turn recorded',
    );
    return { ...recorded, recordMs };
  } catch (error) {
    deps.metrics.recordFailures.inc();
    turn.log.error({ err: error }, 'main turn could not be recorded');
    throw serviceUnavailable('the turn could not be recorded; retry the request', 'turn_not_recorded');
  }
}

/**
 * Keeps the response for `Idempotency-Key` replay, exactly as it is about to be sent; call before its last
 * byte goes out. Throws the error the client should get when it cannot be kept (the request then releases
 * its key, and the client's retry is answered afresh).
 */
export async function keepForReplay(
  turn: ChatTurn,
  response: StoredResponse,
  recorded: RecordedTurn | null,
): Promise<void> {
  if (turn.idempotency === null) return;
  try {
    await turn.idempotency.complete(response, recorded?.ref.sampleId ?? null);
  } catch (error) {
    // The attempt lost its key to a retry: its own error says so.
    if (error instanceof OpenAIError) throw error;
    turn.log.error({ err: error }, 'response could not be kept for Idempotency-Key replay');
    throw serviceUnavailable(
      'the response could not be stored for Idempotency-Key replay; retry the request',
      'idempotency_not_recorded',
    );
  }
}

/**
 * `X-Session-Done`: tells the session workflow (`sessionId`: the turn's, named by its reply when derived). A
 * failure is logged, not fatal: the idle timer closes it.
 */
export async function endSessionIfAsked(
  deps: ChatDeps,
  turn: ChatTurn,
  sessionId: string | null,
): Promise<void> {
  if (!turn.identity.sessionDone || sessionId === null) return;
  try {
    await deps.recorder.endSession(sessionId);
    turn.log.info('session ended by the client');
  } catch (error) {
    deps.metrics.sessionEndFailures.inc();
    turn.log.warn({ err: error }, 'session end could not be signalled; its idle timer will close it');
  }
}
