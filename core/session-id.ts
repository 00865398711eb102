// Which session a chat request belongs to, whether it is trainable, and whether it ends the session
// (DESIGN section 4). Unlike the original (spec 3.2), a request without headers is still trained: the
// session id falls back to the OpenAI `user` field, then to one derived from the conversation's first user
// message, and the turn type defaults to `main`. Every id is scoped by the caller's tenant (core/tenant.ts):
// the same id from two tenants names two sessions.

import { flattenContent } from './chat-messages.js';
import { fnv1a64Hex } from './fnv1a64.js';
import { isImageRefPart } from './image-parts.js';
import { replyView } from './reply-view.js';
import { LOCAL_TENANT, scopedSessionId } from './tenant.js';
import type { TurnType } from './types.js';

/** The parts of an HTTP request this module reads; header names in any case. */
export interface IncomingRequest {
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  body: unknown;
}

export type SessionIdSource = 'header' | 'body' | 'user' | 'derived';

interface Identified {
  /** Who sent it: the tenant of the caller's API key. */
  tenant: string;
  turnType: TurnType;
  sessionDone: boolean;
}

export type SessionIdentification = Identified &
  (
    | /** `sessionId` is the scoped id (`<tenant>/<id>`). */
    { sessionId: string; source: Exclude<SessionIdSource, 'derived'> }
    | {
        sessionId: string;
        source: 'derived';
        /**
         * For a request whose history holds a first reply: the scoped id the conversation had when derived ids
         * also hashed that reply (`legacySessionId`). A conversation begun that way continues in it.
         */
        legacySessionId: string | null;
      }
    | { sessionId: null; source: 'none' }
  );

export interface IdentifyOptions {
  /** The caller's tenant (default `local`, an open gateway's). */
  tenant?: string;
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
  const tenant = options.tenant ?? LOCAL_TENANT;
  const body = isRecord(request.body) ? request.body : {};
  const sessionDone = isTrue(header(request, 'x-session-done')) || isTrue(body.session_done);
  const known = { tenant, sessionDone };

  const explicit: [Exclude<SessionIdSource, 'derived'>, unknown][] = [
    ['header', header(request, 'x-session-id')],
    ['body', body.session_id],
    ['user', body.user],
  ];
  for (const [source, value] of explicit) {
    const id = idText(value);
    if (id !== null)
      return {
        ...known,
        sessionId: scopedSessionId(tenant, safeSessionId(id)),
        source,
        turnType: turnTypeOf(request, body),
      };
  }
  const opening = openingOf(body.messages);
  if (opening === null) return { ...known, sessionId: null, source: 'none', turnType: 'side' };
  return {
    ...known,
    sessionId: scopedSessionId(tenant, deriveSessionId(tenant, opening.text)),
    source: 'derived',
    legacySessionId:
      opening.reply === null
        ? null
        : scopedSessionId(tenant, legacySessionId(tenant, opening.text, opening.reply)),
    turnType: turnTypeOf(request, body),
  };
}

/**
 * A stable id for a conversation without one: `open-` + FNV-1a 64 of the tenant and the conversation's first
 * user message, all the client sends in its first request. Every later request repeats it, so it maps to the
 * same id; a regenerated first reply (the same request again) is a sibling in the same session, where the reply
 * the user continued supersedes it. The system prompt is left out: clients rewrite it between requests of one
 * conversation (OpenClaw lists fewer tools on a fresh home's first run). Two chats that open with the same words
 * are one session; a client that must keep them apart sends an id.
 */
export function deriveSessionId(tenant: string, opening: string): string {
  return `open-${fnv1a64Hex(JSON.stringify([tenant, opening]))}`;
}

/**
 * The id derived before, `conv-` + FNV-1a 64 of the tenant, the first user message and the first reply (as the
 * client sends it back: reply-view.ts). Conversations begun under it keep it (turn-persistence.ts).
 */
export function legacySessionId(tenant: string, opening: string, replyView: string): string {
  return `conv-${fnv1a64Hex(JSON.stringify([tenant, opening, replyView]))}`;
}

/**
 * The opening of a conversation: its first user message (with none, its first message other than a reply) and
 * the view of its first assistant reply (null when it has none yet). Null when there are no messages.
 */
function openingOf(messages: unknown): { text: string; reply: string | null } | null {
  if (!Array.isArray(messages)) return null;
  const all = messages.filter(isRecord);
  const first = all.find((m) => m.role === 'user') ?? all.find((m) => m.role !== 'assistant');
  const reply = all.find((m) => m.role === 'assistant');
  if (first === undefined && reply === undefined) return null;
  return {
    text: first ? `${String(first.role)}:${openingText(first.content)}` : '',
    reply: reply ? replyView(reply.content, reply.tool_calls) : null,
  };
}

/**
 * A message's text, and the digest of each of its images (the gateway has made them `image_ref` parts): two
 * conversations that open with different images are two sessions, and one image sent as a data URL or as a URL
 * opens the same one. Text alone is as it always was, so the ids of text conversations do not change.
 */
function openingText(content: unknown): string {
  const text = flattenContent(content);
  if (!Array.isArray(content)) return text;
  const digests = content.filter(isImageRefPart).map((part) => part.digest);
  return digests.length === 0 ? text : `${text}\n[images ${digests.join(' ')}]`;
}

/**
 * The id itself when it is short and made of safe characters (and not only dots, which name folders), else
 * `h-` + its hash (stable, path-safe).
 */
export function safeSessionId(id: string): string {
  return SAFE_SESSION_ID.test(id) && !/^\.+$/.test(id) ? id : `h-${fnv1a64Hex(id)}`;
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
