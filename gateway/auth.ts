// Bearer-key authentication. Keys are compared as SHA-256 digests with timingSafeEqual, so neither a key's
// length nor its prefix leaks through response timing. No keys configured means an open gateway.

import { createHash, timingSafeEqual } from 'node:crypto';
import { type OpenAIError, unauthorized } from './openai-errors.js';

export type AuthResult =
  /** `scope` names the caller's key (a short digest, never the key): derived session ids are kept per key. */
  { ok: true; scope: string } | { ok: false; error: OpenAIError };

export interface ApiKeyCheck {
  readonly open: boolean;
  check(authorization: string | undefined): AuthResult;
}

export function createApiKeyCheck(apiKeys: readonly string[]): ApiKeyCheck {
  const digests = apiKeys.map(sha256);
  return {
    open: digests.length === 0,
    check(authorization) {
      if (digests.length === 0) return { ok: true, scope: '' };
      const match = /^Bearer\s+(.+)$/i.exec(authorization?.trim() ?? '');
      const key = match?.[1]?.trim();
      if (!key) return { ok: false, error: unauthorized('missing bearer token') };
      const presented = sha256(key);
      // Compare against every key so the time taken does not depend on which one matched.
      let found: Buffer | undefined;
      for (const digest of digests) if (timingSafeEqual(digest, presented)) found = digest;
      if (!found) return { ok: false, error: unauthorized('invalid api key') };
      return { ok: true, scope: `key-${found.toString('hex').slice(0, 12)}` };
    },
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
