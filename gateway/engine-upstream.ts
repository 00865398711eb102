// The gateway's calls to the policy engine, through the engine's adapter (engines/), with the engine's
// failures mapped to the errors a client should see: unreachable → 502, "unavailable" → 503, too slow → 504
// (all with retry-after), its own 4xx relayed with status and message, any other failure → 502.
// There is no short timeout: while the engine swaps weights it holds requests, and they should just wait.

import type { Response } from 'undici';
import type { EngineAdapter } from '../engines/engine-adapter.js';
import { EngineHttpError, engineErrorDetail } from '../engines/engine-http.js';
import {
  badGateway,
  DEFAULT_RETRY_AFTER_SECONDS,
  gatewayTimeout,
  OpenAIError,
  serviceUnavailable,
} from './openai-errors.js';

/** The client went away; nothing is sent and nothing is recorded. */
export class ClientGoneError extends Error {
  constructor() {
    super('the client disconnected');
    this.name = 'ClientGoneError';
  }
}

export interface EngineUpstreamOptions {
  /** Longest a request to the engine may take, streaming included (the adapter's HTTP limit). */
  timeoutMs: number;
  /** Called for each failure talking to the engine, by kind (for metrics). */
  onError?: (kind: UpstreamErrorKind) => void;
}

export type UpstreamErrorKind = 'unreachable' | 'timeout' | 'unavailable' | 'client_error' | 'server_error';

export class EngineUpstream {
  constructor(
    readonly engine: EngineAdapter,
    private readonly options: EngineUpstreamOptions,
  ) {}

  get baseUrl(): string {
    return this.engine.url;
  }

  /** POST /v1/chat/completions; resolves with the engine's 2xx response, its body not yet read. */
  async chatCompletions(body: Record<string, unknown>, clientSignal: AbortSignal): Promise<Response> {
    try {
      return await this.engine.chatCompletions(body, clientSignal);
    } catch (error) {
      throw this.failure(error, clientSignal);
    }
  }

  async models(clientSignal: AbortSignal): Promise<unknown> {
    try {
      return await this.engine.listModels(clientSignal);
    } catch (error) {
      throw this.failure(error, clientSignal);
    }
  }

  /** Whether the engine answers its health check within `timeoutMs`. */
  reachable(timeoutMs = 2_000): Promise<boolean> {
    return this.engine.health(timeoutMs);
  }

  /** The weight version the engine serves now (for answers that do not name theirs). */
  async currentWeightVersion(signal: AbortSignal): Promise<string> {
    try {
      return await this.engine.weightVersion(signal);
    } catch (error) {
      throw this.failure(error, signal);
    }
  }

  /** Reads a 2xx response's JSON; a body that is not JSON is the engine's failure (502). */
  async json(response: Response, clientSignal: AbortSignal): Promise<unknown> {
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw this.failure(error, clientSignal);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      this.options.onError?.('server_error');
      throw badGateway(
        `the policy engine returned a body that is not JSON: ${text.slice(0, 200)}`,
        'upstream_failed',
      );
    }
  }

  /** Maps a failure while talking to the engine (connecting, refused, or reading) to what the client gets. */
  failure(error: unknown, clientSignal: AbortSignal): Error {
    if (error instanceof OpenAIError || error instanceof ClientGoneError) return error;
    if (clientSignal.aborted) return new ClientGoneError();
    if (error instanceof EngineHttpError) return this.fromEngine(error);
    if (error instanceof Error && error.name === 'TimeoutError') {
      this.options.onError?.('timeout');
      return gatewayTimeout(`the policy engine did not answer within ${this.options.timeoutMs} ms`);
    }
    this.options.onError?.('unreachable');
    const cause = error instanceof Error ? describeCause(error) : String(error);
    return badGateway(`the policy engine at ${this.baseUrl} is unreachable: ${cause}`);
  }

  private fromEngine(error: EngineHttpError): OpenAIError {
    switch (error.kind) {
      case 'timeout':
        this.options.onError?.('timeout');
        return gatewayTimeout(`the policy engine did not answer within ${this.options.timeoutMs} ms`);
      case 'unavailable':
        this.options.onError?.('unavailable');
        return serviceUnavailable(
          `the policy engine is unavailable: ${engineErrorDetail(error.body).message}`,
          'engine_unavailable',
          error.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS,
        );
      case 'client_error': {
        this.options.onError?.('client_error');
        const detail = engineErrorDetail(error.body);
        return new OpenAIError(
          error.status ?? 400,
          detail.message,
          detail.type ?? 'invalid_request_error',
          detail.param,
          detail.code,
        );
      }
      case 'server_error':
      case 'bad_response':
        this.options.onError?.('server_error');
        return badGateway(
          error.status
            ? `the policy engine failed (HTTP ${error.status}): ${engineErrorDetail(error.body).message}`
            : error.message,
          'upstream_failed',
        );
      default:
        this.options.onError?.('unreachable');
        return badGateway(error.message);
    }
  }
}

/** fetch hides the useful part ("connect ECONNREFUSED 127.0.0.1:1") in `cause`. */
function describeCause(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) return `${error.message} (${cause.message})`;
  return error.message;
}
