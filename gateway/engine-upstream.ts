// The gateway's calls to the policy engine (SGLang or the reference engine), with the engine's failures
// mapped to the errors a client should see: unreachable → 502, "unavailable" → 503, too slow → 504 (all
// with retry-after), its own 4xx relayed with status and message, any other failure → 502.
// There is no short timeout: while the engine swaps weights it holds requests, and they should just wait.

import { Agent, fetch, type RequestInit, type Response } from 'undici';
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
  /** Longest a request to the engine may take, streaming included. */
  timeoutMs: number;
  /** Called for each failure talking to the engine, by kind (for metrics). */
  onError?: (kind: UpstreamErrorKind) => void;
}

export type UpstreamErrorKind = 'unreachable' | 'timeout' | 'unavailable' | 'client_error' | 'server_error';

export class EngineUpstream {
  // undici's own client: Node's built-in fetch ends a request whose headers or body pause for 300 s, which a
  // long non-streaming generation exceeds. The overall limit is `timeoutMs`, enforced by the abort signal.
  private readonly dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });

  constructor(
    readonly baseUrl: string,
    private readonly options: EngineUpstreamOptions,
  ) {}

  /** POST /v1/chat/completions; resolves with the engine's 2xx response, its body not yet read. */
  chatCompletions(body: unknown, clientSignal: AbortSignal): Promise<Response> {
    return this.request('/v1/chat/completions', clientSignal, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(body),
    });
  }

  async models(clientSignal: AbortSignal): Promise<unknown> {
    const response = await this.request('/v1/models', clientSignal, { method: 'GET' });
    return this.json(response, clientSignal);
  }

  /** Whether the engine answers its health check within `timeoutMs`. */
  async reachable(timeoutMs = 2_000): Promise<boolean> {
    try {
      const response = await fetch(`${this.baseUrl}/health`, { signal: AbortSignal.timeout(timeoutMs) });
      await response.body?.cancel();
      return response.ok;
    } catch {
      return false;
    }
  }

  /** The weight version the engine serves now (for engines that do not report it per response). */
  async currentWeightVersion(clientSignal: AbortSignal): Promise<unknown> {
    const response = await this.request('/get_model_info', clientSignal, { method: 'GET' });
    const info = (await this.json(response, clientSignal)) as { weight_version?: unknown } | null;
    return info?.weight_version;
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

  /**
   * The abort signal for a request: the client's (it went away) or the timeout. Pass it to `failure` to tell
   * which one fired.
   */
  signalFor(clientSignal: AbortSignal): AbortSignal {
    return AbortSignal.any([clientSignal, AbortSignal.timeout(this.options.timeoutMs)]);
  }

  /** Maps a failure while talking to the engine (connecting or reading) to what the client should get. */
  failure(error: unknown, clientSignal: AbortSignal): Error {
    if (error instanceof OpenAIError || error instanceof ClientGoneError) return error;
    if (clientSignal.aborted) return new ClientGoneError();
    if (error instanceof Error && error.name === 'TimeoutError') {
      this.options.onError?.('timeout');
      return gatewayTimeout(`the policy engine did not answer within ${this.options.timeoutMs} ms`);
    }
    this.options.onError?.('unreachable');
    const cause = error instanceof Error ? describeCause(error) : String(error);
    return badGateway(`the policy engine at ${this.baseUrl} is unreachable: ${cause}`);
  }

  private async request(path: string, clientSignal: AbortSignal, init: RequestInit): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        ...init,
        dispatcher: this.dispatcher,
        signal: this.signalFor(clientSignal),
      });
    } catch (error) {
      throw this.failure(error, clientSignal);
    }
    if (response.ok) return response;
    let text = '';
    try {
      text = await response.text();
    } catch (error) {
      throw this.failure(error, clientSignal);
    }
    throw this.refusal(response, text);
  }

  /** The engine answered with an error status. */
  private refusal(response: Response, text: string): OpenAIError {
    const detail = engineErrorDetail(text);
    const status = response.status;
    if (status === 503) {
      this.options.onError?.('unavailable');
      return serviceUnavailable(
        `the policy engine is unavailable: ${detail.message}`,
        'engine_unavailable',
        retryAfterOf(response) ?? DEFAULT_RETRY_AFTER_SECONDS,
      );
    }
    if (status >= 400 && status < 500) {
      this.options.onError?.('client_error');
      return new OpenAIError(
        status,
        detail.message,
        detail.type ?? 'invalid_request_error',
        detail.param,
        detail.code,
      );
    }
    this.options.onError?.('server_error');
    return badGateway(`the policy engine failed (HTTP ${status}): ${detail.message}`, 'upstream_failed');
  }
}

interface EngineErrorDetail {
  message: string;
  type: string | null;
  param: string | null;
  code: string | number | null;
}

/** OpenAI's `{error: {...}}`, SGLang's flat `{object: "error", message, ...}`, FastAPI's `{detail}`, or text. */
export function engineErrorDetail(text: string): EngineErrorDetail {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { message: text.trim().slice(0, 1000) || 'no details', type: null, param: null, code: null };
  }
  const record = isRecord(parsed) ? parsed : {};
  const inner = isRecord(record.error) ? record.error : record;
  const message =
    typeof inner.message === 'string'
      ? inner.message
      : typeof record.detail === 'string'
        ? record.detail
        : text.slice(0, 1000);
  return {
    message,
    type: typeof inner.type === 'string' ? inner.type : null,
    param: typeof inner.param === 'string' ? inner.param : null,
    code: typeof inner.code === 'string' || typeof inner.code === 'number' ? inner.code : null,
  };
}

function retryAfterOf(response: Response): number | null {
  const value = Number(response.headers.get('retry-after'));
  return Number.isFinite(value) && value > 0 ? Math.ceil(value) : null;
}

/** fetch hides the useful part ("connect ECONNREFUSED 127.0.0.1:1") in `cause`. */
function describeCause(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) return `${error.message} (${cause.message})`;
  return error.message;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
