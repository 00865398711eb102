// Every error the gateway answers has OpenAI's shape, `{error: {message, type, param, code}}`, so OpenAI
// clients raise their usual typed errors. One class carries the status and, for retryable server-side
// conditions, how long a client should wait (`retry-after`).

export type OpenAIErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'server_error'
  | 'upstream_error';

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | number | null };
}

export class OpenAIError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: OpenAIErrorType | string,
    readonly param: string | null = null,
    readonly code: string | number | null = null,
    /** Seconds for the `retry-after` header; set on the statuses a client should retry (429, 502, 503, 504). */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.name = 'OpenAIError';
  }

  toJSON(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** How long a client should wait before retrying after the engine or the recorder was unavailable. */
export const DEFAULT_RETRY_AFTER_SECONDS = 5;

export function invalidRequest(message: string, param: string | null = null, code: string | null = null) {
  return new OpenAIError(400, message, 'invalid_request_error', param, code);
}

export function unauthorized(message: string): OpenAIError {
  return new OpenAIError(401, message, 'authentication_error', null, 'invalid_api_key');
}

export function notFound(message: string, param: string | null = null): OpenAIError {
  return new OpenAIError(404, message, 'not_found_error', param, 'not_found');
}

export function payloadTooLarge(limitBytes: number): OpenAIError {
  return new OpenAIError(
    413,
    `request body exceeds the limit of ${limitBytes} bytes`,
    'invalid_request_error',
    'body',
    'request_too_large',
  );
}

/** A key sent more requests than its per-minute budget (OpenAI's own type and code for this case). */
export function rateLimited(limitPerMinute: number, retryAfterSeconds: number): OpenAIError {
  return new OpenAIError(
    429,
    `Rate limit reached: ${limitPerMinute} requests per minute for this API key. Please try again in ${retryAfterSeconds}s.`,
    'requests',
    null,
    'rate_limit_exceeded',
    retryAfterSeconds,
  );
}

/** The engine could not be reached or failed: the request may succeed if retried. */
export function badGateway(
  message: string,
  code = 'upstream_unavailable',
  retryAfterSeconds = DEFAULT_RETRY_AFTER_SECONDS,
): OpenAIError {
  return new OpenAIError(502, message, 'upstream_error', null, code, retryAfterSeconds);
}

export function serviceUnavailable(
  message: string,
  code = 'service_unavailable',
  retryAfterSeconds = DEFAULT_RETRY_AFTER_SECONDS,
): OpenAIError {
  return new OpenAIError(503, message, 'server_error', null, code, retryAfterSeconds);
}

export function gatewayTimeout(message: string): OpenAIError {
  return new OpenAIError(
    504,
    message,
    'upstream_error',
    null,
    'upstream_timeout',
    DEFAULT_RETRY_AFTER_SECONDS,
  );
}

export function internalError(message: string): OpenAIError {
  return new OpenAIError(500, message, 'server_error', null, 'internal_error');
}
