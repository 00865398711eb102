// Errors on the Messages route in Anthropic's shape, `{type: "error", error: {type, message}}`, so Anthropic
// clients raise their usual typed errors (the SDK picks its class by status and reads `error.type` and
// `error.message`). The gateway's pipeline throws OpenAIError everywhere; this renders one for this route, the
// status (and its retry-after) unchanged.

import type { OpenAIError } from '../openai-errors.js';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
}

/** Anthropic's error type for an HTTP status (its documented pairs; other 4xx are invalid requests). */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 409:
      return 'conflict_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
  }
  return status >= 500 ? 'api_error' : 'invalid_request_error';
}

export function anthropicErrorBody(error: OpenAIError): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(error.status), message: error.message } };
}

/** Error types whose name and meaning OpenAI's and Anthropic's shapes share; any other is an `api_error`. */
const SHARED_TYPES = new Set(['invalid_request_error', 'authentication_error', 'not_found_error']);

/**
 * An error in OpenAI's shape (the engine's own mid-stream error, or the gateway's) as Anthropic's `error` event,
 * for a stream whose headers are already sent: the SDK raises it as an APIError of that type.
 */
export function anthropicErrorEvent(body: { error: unknown }): string {
  const error =
    typeof body.error === 'object' && body.error !== null ? (body.error as Record<string, unknown>) : {};
  const message = typeof error.message === 'string' ? error.message : JSON.stringify(body.error);
  const type = typeof error.type === 'string' && SHARED_TYPES.has(error.type) ? error.type : 'api_error';
  const data: AnthropicErrorBody = { type: 'error', error: { type, message } };
  return `event: error\ndata: ${JSON.stringify(data)}\n\n`;
}
