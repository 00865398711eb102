// Hashes of JSON values that do not depend on how a client wrote them (canonical JSON: keys sorted at every
// depth), so the same request hashes the same whatever order its keys came in.

import { hash } from 'node:crypto';

export { canonicalJson } from '../core/canonical-json.js';

/**
 * SHA-256 of the parts joined by NUL (none of them contains one: they are hex digests or JSON), as hex. One call,
 * no Hash object: a main turn makes one per message of its conversation.
 */
export function sha256Hex(...parts: string[]): string {
  return hash('sha256', parts.join('\0'), 'hex');
}
