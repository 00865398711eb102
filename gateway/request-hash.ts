// Hashes of JSON values that do not depend on how a client wrote them: object keys are sorted at every depth,
// so the same request hashes the same whatever order its keys came in.

import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every depth (undefined members dropped, as JSON.stringify does). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** SHA-256 of the parts joined by NUL (none of them contains one: they are hex digests or JSON), as hex. */
export function sha256Hex(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex');
}
