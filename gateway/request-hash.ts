// Recognises a retried request: the same messages and tools hash the same, whatever order the client
// wrote the keys of its JSON objects in.

import { createHash } from 'node:crypto';

export function requestHash(messages: unknown, tools: unknown): string {
  return createHash('sha256')
    .update(canonicalJson({ messages, tools: tools ?? null }))
    .digest('hex');
}

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
