// The one HTTP client every engine adapter talks through. It knows nothing of any engine's routes: it sends
// JSON, reads JSON, and turns every way a call can fail into an `EngineHttpError` whose `kind` says what
// happened (unreachable, too slow, refused with a 4xx, failed with a 5xx, unavailable with a 503, or a body
// that is not JSON), so the gateway can map it to the OpenAI error a client sees and an activity can decide
// whether a retry could help.
//
// undici's own client: Node's built-in fetch ends a request whose headers or body pause for 300 s, which a
// long non-streaming generation (or an engine holding requests while it swaps weights) exceeds. The overall
// limit is the caller's: `timeoutMs` per call, enforced by an abort signal.

import { Agent, fetch, type Response } from 'undici';

export type EngineFailureKind =
  | 'unreachable'
  | 'timeout'
  | 'aborted'
  | 'unavailable'
  | 'client_error'
  | 'server_error'
  | 'bad_response';

export class EngineHttpError extends Error {
  override name = 'EngineHttpError';

  constructor(
    readonly kind: EngineFailureKind,
    message: string,
    /** The engine's HTTP status, when it answered. */
    readonly status: number | null = null,
    /** The engine's error text (its body, trimmed), when it answered. */
    readonly body = '',
    /** Seconds the engine asked the caller to wait (a 503's retry-after). */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
  }

  /** A request that will fail the same way again: the engine refused it (4xx other than 408/429). */
  get permanent(): boolean {
    return this.kind === 'client_error' && this.status !== null && this.status !== 408 && this.status !== 429;
  }
}

/** One call as the adapter sent it: what the conformance checks and the request log see. */
export interface EngineCall {
  method: 'GET' | 'POST';
  path: string;
  body: unknown;
}

export interface EngineHttpOptions {
  /** Longest one call may take, streaming included (default 15 minutes: weight swaps hold requests). */
  timeoutMs?: number;
  /** Sees every call before it is sent (request logs, conformance recording). */
  onCall?: (call: EngineCall) => void;
  /** Headers sent with every call (an API key). */
  headers?: Record<string, string>;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Query parameters (vLLM's /pause takes its mode there). */
  query?: Record<string, string>;
  headers?: Record<string, string>;
}

export const DEFAULT_ENGINE_TIMEOUT_MS = 15 * 60 * 1000;

export class EngineHttp {
  private readonly dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
  private readonly timeoutMs: number;

  constructor(
    readonly baseUrl: string,
    private readonly options: EngineHttpOptions = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_ENGINE_TIMEOUT_MS;
  }

  /** Sends one call; resolves with the engine's 2xx response, its body not yet read. */
  async send(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    options: CallOptions = {},
  ): Promise<Response> {
    this.options.onCall?.({ method, path, body });
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (options.signal) signals.push(options.signal);
    const signal = AbortSignal.any(signals);
    const query = options.query ? `?${new URLSearchParams(options.query).toString()}` : '';
    const url = `${this.baseUrl}${path}${query}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        dispatcher: this.dispatcher,
        signal,
        headers: {
          accept: 'application/json, text/event-stream',
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...this.options.headers,
          ...options.headers,
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw this.failure(error, `${method} ${path}`, timeoutMs, options.signal);
    }
    if (response.ok) return response;
    let text = '';
    try {
      text = await response.text();
    } catch (error) {
      throw this.failure(error, `${method} ${path}`, timeoutMs, options.signal);
    }
    throw refusal(`${method} ${path}`, response, text);
  }

  /** Sends one call and reads its JSON answer (an empty body reads as null). */
  async json(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    options: CallOptions = {},
  ): Promise<unknown> {
    const response = await this.send(method, path, body, options);
    return this.readJson(response, `${method} ${path}`, options.signal);
  }

  /** Reads a 2xx response's JSON; a body that is not JSON is the engine's failure. */
  async readJson(response: Response, what: string, signal?: AbortSignal): Promise<unknown> {
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw this.failure(error, what, this.timeoutMs, signal);
    }
    if (text.trim() === '') return null;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new EngineHttpError(
        'bad_response',
        `${what}: the engine at ${this.baseUrl} returned a body that is not JSON: ${text.slice(0, 200)}`,
        response.status,
        text.slice(0, 1000),
      );
    }
  }

  /** Whether `GET path` answers 2xx within `timeoutMs`. */
  async answers(path: string, timeoutMs = 2_000): Promise<boolean> {
    try {
      const response = await this.send('GET', path, undefined, { timeoutMs });
      await response.body?.cancel();
      return true;
    } catch {
      return false;
    }
  }

  /** Maps a failure while connecting or reading to its kind; the caller's own abort is `aborted`. */
  failure(
    error: unknown,
    what: string,
    timeoutMs = this.timeoutMs,
    callerSignal?: AbortSignal,
  ): EngineHttpError {
    if (error instanceof EngineHttpError) return error;
    if (callerSignal?.aborted) return new EngineHttpError('aborted', `${what}: the caller gave up`);
    if (error instanceof Error && error.name === 'TimeoutError')
      return new EngineHttpError(
        'timeout',
        `${what}: the engine at ${this.baseUrl} did not answer within ${timeoutMs} ms`,
      );
    const cause = error instanceof Error ? describeCause(error) : String(error);
    return new EngineHttpError(
      'unreachable',
      `${what}: the engine at ${this.baseUrl} is unreachable: ${cause}`,
    );
  }
}

function refusal(what: string, response: Response, text: string): EngineHttpError {
  const detail = engineErrorMessage(text);
  const status = response.status;
  if (status === 503) {
    const retryAfter = Number(response.headers.get('retry-after'));
    return new EngineHttpError(
      'unavailable',
      `${what}: the engine is unavailable: ${detail}`,
      status,
      text.slice(0, 1000),
      Number.isFinite(retryAfter) && retryAfter > 0 ? Math.ceil(retryAfter) : null,
    );
  }
  const kind = status >= 400 && status < 500 ? 'client_error' : 'server_error';
  return new EngineHttpError(kind, `${what}: HTTP ${status}: ${detail}`, status, text.slice(0, 1000));
}

/** fetch hides the useful part ("connect ECONNREFUSED 127.0.0.1:1") in `cause`. */
function describeCause(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) return `${error.message} (${cause.message})`;
  return error.message;
}

export interface EngineErrorDetail {
  message: string;
  type: string | null;
  param: string | null;
  code: string | number | null;
}

/**
 * An engine's error body: OpenAI's `{error: {...}}`, SGLang's flat `{object: "error", message, ...}`, vLLM's
 * `{error: "text"}` (its control routes), FastAPI's `{detail}`, or plain text.
 */
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
      : typeof record.error === 'string'
        ? record.error
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

function engineErrorMessage(text: string): string {
  return engineErrorDetail(text).message;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
