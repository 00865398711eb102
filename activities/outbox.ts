// The outbox of the durable hand-off: what the gateway still has to tell session workflows. A main turn is
// acknowledged once its record and its outbox entry are durable in the store; a relay (outbox-relay.ts) then
// delivers each entry to its session workflow whenever Temporal can take it, in order per session, and removes
// it. Entries of one session are leased to one relay at a time, so a dead gateway's entries are delivered by
// another process once its lease runs out. Delivery is at least once: the session workflow ignores turns it
// already has, so an entry delivered twice (a crash after the signal, before the removal) is harmless.

import { z } from 'zod';
import type { TurnRef } from '../core/types.js';

export const outboxMessageSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('turn'),
    // Loose: fields a newer gateway adds to a turn reference travel through unchanged.
    ref: z.looseObject({
      sessionId: z.string().min(1),
      turn: z.number().int().min(1),
      sampleId: z.string().min(1),
      policyVersion: z.number().int().min(0),
      kind: z.enum(['main', 'side']),
    }),
  }),
  z.object({ kind: z.literal('session-done') }),
]);

/** A turn to hand to its session workflow, or the client's end of the session (`X-Session-Done`). */
export type OutboxMessage = { kind: 'turn'; ref: TurnRef } | { kind: 'session-done' };

export const outboxEntrySchema = z.object({
  /** Unique per message: a second enqueue of the same id is a no-op where the store can tell. */
  id: z.string().min(1),
  sessionId: z.string().min(1),
  message: outboxMessageSchema,
  /** Milliseconds since the epoch when the entry was written (the lag metrics start here). */
  createdAt: z.number().int().min(0),
});

export interface OutboxEntry {
  id: string;
  sessionId: string;
  message: OutboxMessage;
  createdAt: number;
  /** Where the store keeps it (a file name, a row number); set by the store on the entries it returns. */
  position?: string;
}

export interface OutboxStats {
  /** Entries not yet delivered. */
  depth: number;
  /** `createdAt` of the oldest of them; null when the outbox is empty. */
  oldestCreatedAt: number | null;
}

export interface Outbox {
  /** Adds an entry; durable when it resolves. */
  enqueue(entry: OutboxEntry): Promise<void>;
  /**
   * Leases sessions that have entries to `holder` for `leaseMs` (sessions whose lease is free, has run out,
   * or is already `holder`'s, which renews it) and returns their oldest entries, at most `limit`, in order
   * within each session. A session leased to another live holder is left alone.
   */
  claim(holder: string, leaseMs: number, limit: number): Promise<OutboxEntry[]>;
  /** Removes delivered entries (as returned by `claim`). */
  remove(entries: readonly OutboxEntry[]): Promise<void>;
  /** Gives up `holder`'s leases of these sessions (all of them when omitted), so others may take them now. */
  release(holder: string, sessionIds?: readonly string[]): Promise<void>;
  stats(): Promise<OutboxStats>;
}

/** The entry that hands a recorded main turn to its session workflow. */
export function turnEntry(ref: TurnRef, now = Date.now()): OutboxEntry {
  return {
    id: `turn:${ref.sampleId}`,
    sessionId: ref.sessionId,
    message: { kind: 'turn', ref },
    createdAt: now,
  };
}

/** The entry that tells a session workflow its client ended the session. */
export function sessionDoneEntry(sessionId: string, now = Date.now()): OutboxEntry {
  return {
    id: `done:${sessionId}:${now}:${Math.random().toString(36).slice(2, 10)}`,
    sessionId,
    message: { kind: 'session-done' },
    createdAt: now,
  };
}
