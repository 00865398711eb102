// Bearer-key authentication (Anthropic clients may send the key as `x-api-key` instead, on the routes that serve
// them: `credentialOf`). Keys are compared as SHA-256 digests with timingSafeEqual, so neither a key's
// length nor its prefix leaks through response timing. Each key belongs to a tenant (the one its keys-file
// entry names, else the key's own name); no keys configured means an open gateway, whose one tenant is `local`.

import { createHash, timingSafeEqual } from 'node:crypto';
import { type ApiKey, LOCAL_TENANT } from '../core/tenant.js';
import { type OpenAIError, unauthorized } from './openai-errors.js';

export interface Caller {
  /** Scopes the caller's session ids and Idempotency-Keys. */
  tenant: string;
  /** Names the caller's key (a short digest, never the key): rate limits count per key. Empty when open. */
  keyName: string;
}

export type AuthResult = ({ ok: true } & Caller) | { ok: false; error: OpenAIError };

export interface ApiKeyCheck {
  readonly open: boolean;
  check(authorization: string | undefined): AuthResult;
}

/** `key-<12 hex digits of its SHA-256>`: how a key is named in logs, and its tenant when none is given. */
export function apiKeyName(key: string): string {
  return `key-${sha256(key).toString('hex').slice(0, 12)}`;
}

export function createApiKeyCheck(apiKeys: readonly (string | ApiKey)[]): ApiKeyCheck {
  const known = apiKeys.map((entry) => {
    const { key, tenant } = typeof entry === 'string' ? { key: entry, tenant: undefined } : entry;
    const keyName = apiKeyName(key);
    return { digest: sha256(key), caller: { tenant: tenant ?? keyName, keyName } };
  });
  return {
    open: known.length === 0,
    check(authorization) {
      if (known.length === 0) return { ok: true, tenant: LOCAL_TENANT, keyName: '' };
      const match = /^Bearer\s+(.+)$/i.exec(authorization?.trim() ?? '');
      const key = match?.[1]?.trim();
      if (!key) return { ok: false, error: unauthorized('missing bearer token') };
      const presented = sha256(key);
      // Compare against every key so the time taken does not depend on which one matched.
      let found: Caller | undefined;
      for (const entry of known) if (timingSafeEqual(entry.digest, presented)) found = entry.caller;
      if (!found) return { ok: false, error: unauthorized('invalid api key') };
      return { ok: true, ...found };
    },
  };
}

/**
 * The `Authorization` value a request presents: its own, or where `apiKeyHeader` (a route for Anthropic
 * clients, which send `x-api-key: <key>`) and it has none, its `x-api-key` as a bearer token.
 */
export function credentialOf(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  apiKeyHeader: boolean,
): string | undefined {
  const authorization = typeof headers.authorization === 'string' ? headers.authorization : undefined;
  if (authorization !== undefined || !apiKeyHeader) return authorization;
  const key = headers['x-api-key'];
  const value = (Array.isArray(key) ? key[0] : key)?.trim();
  return value ? `Bearer ${value}` : undefined;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
