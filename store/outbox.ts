// The outbox of the durable hand-off: what the gateway still has to tell session workflows. A main turn is
// acknowledged once its record and its outbox entry are durable in the store; a relay (outbox-relay.ts) then
// delivers each entry to its session workflow whenever Temporal can take it, in order per session, and removes
// it. Entries of one session are leased to one relay at a time, so a dead gateway's entries are delivered by
// another process once its lease runs out. Delivery is at least once: the session workflow ignores turns it
// already has, so an entry delivered twice (a crash after the signal, before the removal) is harmless.

import { context, propagation } from '@opentelemetry/api';
import { z } from 'zod';
import type { FeedbackNote } from '../core/feedback.js';
import type { TurnRef } from '../core/types.js';
import type { SessionInput } from '../workflows/session-signals.js';

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
  z.object({
    kind: z.literal('feedback'),
    note: z.looseObject({
      feedbackId: z.string().min(1),
      sampleId: z.string().min(1),
      rating: z.number().min(-1).max(1).nullable(),
      hasCorrection: z.boolean(),
    }),
  }),
]);

/**
 * A turn to hand to its session workflow, the client's end of the session (`X-Session-Done`), or explicit
 * feedback on one of its turns (its text stays in the store).
 */
export type OutboxMessage =
  | { kind: 'turn'; ref: TurnRef }
  | { kind: 'session-done' }
  | { kind: 'feedback'; note: FeedbackNote };

/** The session workflow an entry goes to, as its writer would start it: any relay starts the same one. */
export const outboxWorkflowSchema = z.object({
  taskQueue: z.string().min(1),
  // Loose for the same reason as turn references; what every session workflow needs is checked.
  input: z.looseObject({
    sessionId: z.string().min(1),
    runId: z.string().min(1),
    method: z.enum(['rl', 'opd', 'combine']),
    judgeVotes: z.number().int().min(1),
    idleTimeoutMs: z.number().int().min(1),
    continueAsNewAfterTurns: z.number().int().min(1),
  }),
  // W3C trace context of the request that wrote the entry, so its delivery joins that request's trace.
  traceContext: z.record(z.string(), z.string()).optional(),
});

export interface OutboxWorkflow {
  taskQueue: string;
  input: SessionInput;
  traceContext?: Record<string, string>;
}

/** `workflow` with the active trace context (none when tracing is off). */
function traced(workflow: OutboxWorkflow): OutboxWorkflow {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length > 0 ? { ...workflow, traceContext: carrier } : workflow;
}

export const outboxEntrySchema = z.object({
  /** Unique per message: a second enqueue of the same id is a no-op where the store can tell. */
  id: z.string().min(1),
  sessionId: z.string().min(1),
  message: outboxMessageSchema,
  workflow: outboxWorkflowSchema,
  /** Milliseconds since the epoch when the entry was written (the lag metrics start here). */
  createdAt: z.number().int().min(0),
});

export interface OutboxEntry {
  id: string;
  sessionId: string;
  message: OutboxMessage;
  workflow: OutboxWorkflow;
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

export interface ClaimLimit {
  sessions: number;
  entries: number;
  /**
   * Epoch ms: sessions are newly leased only when their oldest entry was written before it, for a relay that
   * stands by for others and takes only what their relays left. Where one lease covers the outbox, it is taken
   * or renewed only while the outbox's oldest entry was.
   */
  writtenBefore?: number;
}

export interface Claim {
  entries: OutboxEntry[];
  /** The sessions `holder` holds for `leaseMs` from the claim on; `all` where one lease covers the outbox. */
  sessions: readonly string[] | 'all';
}

export interface Outbox {
  /** Adds an entry; durable when it resolves. */
  enqueue(entry: OutboxEntry): Promise<void>;
  /**
   * Renews every lease `holder` has, leases it more sessions that have entries (free or run-out leases, at most
   * `limit.sessions`, oldest first), and returns the sessions it now holds with their oldest entries, at most
   * `limit.entries`, in order within each session. A session leased to another live holder is left alone.
   */
  claim(holder: string, leaseMs: number, limit: ClaimLimit): Promise<Claim>;
  /** Removes delivered entries (as returned by `claim`). */
  remove(entries: readonly OutboxEntry[]): Promise<void>;
  /** Gives up `holder`'s leases of these sessions (all of them when omitted), so others may take them now. */
  release(holder: string, sessionIds?: readonly string[]): Promise<void>;
  stats(): Promise<OutboxStats>;
  /** Calls `onChange` soon after entries are added by any process, where the store can tell; returns a stop. */
  watch?(onChange: () => void): () => void;
}

/** An entry read back from a store, or null when it is not one this code wrote (store data is a boundary). */
export function parseOutboxEntry(raw: unknown, position: string): OutboxEntry | null {
  const parsed = outboxEntrySchema.safeParse(raw);
  // The schema checks what delivery relies on and passes newer fields through, so the parsed value is the entry.
  return parsed.success ? { ...(parsed.data as unknown as OutboxEntry), position } : null;
}

/** The entry that hands a recorded main turn to its session workflow. */
export function turnEntry(ref: TurnRef, workflow: OutboxWorkflow, now = Date.now()): OutboxEntry {
  return {
    id: `turn:${ref.sampleId}`,
    sessionId: ref.sessionId,
    message: { kind: 'turn', ref },
    workflow: traced(workflow),
    createdAt: now,
  };
}

/** The entry that tells a session workflow its client ended the session. */
export function sessionDoneEntry(sessionId: string, workflow: OutboxWorkflow, now = Date.now()): OutboxEntry {
  return {
    id: `done:${sessionId}:${now}:${Math.random().toString(36).slice(2, 10)}`,
    sessionId,
    message: { kind: 'session-done' },
    workflow: traced(workflow),
    createdAt: now,
  };
}

/** The entry that hands explicit feedback to the session workflow of its turn. */
export function feedbackEntry(
  sessionId: string,
  note: FeedbackNote,
  workflow: OutboxWorkflow,
  now = Date.now(),
): OutboxEntry {
  return {
    id: `feedback:${note.sampleId}:${note.feedbackId}`,
    sessionId,
    message: { kind: 'feedback', note },
    workflow: traced(workflow),
    createdAt: now,
  };
}
