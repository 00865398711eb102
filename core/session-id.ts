// Which session a chat request belongs to, whether it is trainable, and whether it ends the session
// (DESIGN section 4). Unlike the original (spec 3.2), a request without headers is still trained: the
// session id falls back to the OpenAI `user` field, then to a hash of the conversation's opening messages,
// and the turn type defaults to `main`.

import { flattenContent } from './chat-messages.js';
import { fnv1a64Hex } from './fnv1a64.js';
import type { TurnType } from './types.js';

/** The parts of an HTTP request this module reads; header names in any case. */
export interface IncomingRequest {
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  body: unknown;
}

export type SessionIdSource = 'header' | 'body' | 'user' | 'derived';

export type SessionIdentification =
  | { sessionId: string; source: SessionIdSource; turnType: TurnType; sessionDone: boolean }
  | { sessionId: null; source: 'none'; turnType: 'side'; sessionDone: boolean };

export interface IdentifyOptions {
  /** Mixed into derived ids (e.g. the caller's API key name) so two tenants' identical chats stay apart. */
  scope?: string;
}

/** Body fields that carry session metadata; they are not OpenAI fields and are removed before forwarding. */
export const SESSION_BODY_FIELDS = ['session_id', 'session_done', 'turn_type'] as const;

/** Ids used as they are; anything else (too long, slashes, spaces...) is replaced by a hash of itself. */
const SAFE_SESSION_ID = /^[A-Za-z0-9._:@-]{1,128}$/;
const TRUE_VALUES = new Set(['1', 'true', 'yes', 'on']);

export function identifySession(
  request: IncomingRequest,
  options: IdentifyOptions = {},
): SessionIdentification {
  const body = isRecord(request.body) ? request.body : {};
  const sessionDone = isTrue(header(request, 'x-session-done')) || isTrue(body.session_done);

  const explicit: [SessionIdSource, unknown][] = [
    ['header', header(request, 'x-session-id')],
    ['body', body.session_id],
    ['user', body.user],
  ];
  for (const [source, value] of explicit) {
    const id = idText(value);
    if (id !== null)
      return { sessionId: safeSessionId(id), source, turnType: turnTypeOf(request, body), sessionDone };
  }
  const derived = deriveSessionId(body.messages, options.scope);
  if (derived !== null)
    return { sessionId: derived, source: 'derived', turnType: turnTypeOf(request, body), sessionDone };
  return { sessionId: null, source: 'none', turnType: 'side', sessionDone };
}

/**
 * A stable id for a conversation without one: `conv-` + FNV-1a 64 of its first system (or developer) message
 * and its first user message (or, with neither, its first message). Every later request of the conversation
 * repeats those messages, so it maps to the same id. Null when there are no messages.
 */
export function deriveSessionId(messages: unknown, scope = ''): string | null {
  if (!Array.isArray(messages) || messages.length === 0) return null;
  const all = messages.filter(isRecord);
  const system = all.find((m) => m.role === 'system' || m.role === 'developer');
  const user = all.find((m) => m.role === 'user');
  const opening =
    system || user
      ? [system ? flattenContent(system.content) : null, user ? flattenContent(user.content) : null]
      : [String(all[0]?.role ?? ''), flattenContent(all[0]?.content)];
  return `conv-${fnv1a64Hex(JSON.stringify([scope, ...opening]))}`;
}

/** The id itself when it is short and made of safe characters, else `h-` + its hash (stable, path-safe). */
export function safeSessionId(id: string): string {
  return SAFE_SESSION_ID.test(id) ? id : `h-${fnv1a64Hex(id)}`;
}

/** A copy of the body without the session metadata fields. */
export function stripSessionFields(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...body };
  for (const field of SESSION_BODY_FIELDS) delete copy[field];
  return copy;
}

/** `X-Turn-Type` (or the body's `turn_type`): `main` when absent; values other than main/side are `side`. */
function turnTypeOf(request: IncomingRequest, body: Record<string, unknown>): TurnType {
  const raw =
    header(request, 'x-turn-type') ?? (typeof body.turn_type === 'string' ? body.turn_type : undefined);
  if (raw === undefined || raw.trim() === '') return 'main';
  return raw.trim().toLowerCase() === 'main' ? 'main' : 'side';
}

function header(request: IncomingRequest, name: string): string | undefined {
  for (const [key, value] of Object.entries(request.headers)) {
    if (key.toLowerCase() !== name) continue;
    const first = typeof value === 'string' ? value : value?.[0];
    if (first !== undefined) return first;
  }
  return undefined;
}

function idText(value: unknown): string | null {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

/** The original's truthy set, case-insensitive: "1", "true", "yes", "on" (and JSON true or 1). */
function isTrue(value: unknown): boolean {
  if (value === true || value === 1) return true;
  return typeof value === 'string' && TRUE_VALUES.has(value.trim().toLowerCase());
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
