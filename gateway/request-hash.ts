// Hashes of JSON values that do not depend on how a client wrote them (canonical JSON: keys sorted at every
// depth), so the same request hashes the same whatever order its keys came in.

import { createHash } from 'node:crypto';

export { canonicalJson } from '../core/canonical-json.js';

/** SHA-256 of the parts joined by NUL (none of them contains one: they are hex digests or JSON), as hex. */
export function sha256Hex(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex');
}
