// Recording a main turn in the sample store: the record is written under its sample id, a pure function of its
// prefix and response (create-if-absent, so several gateways and restarts agree without coordination), together
// with its outbox entry, and indexed by its reply so that the request that keeps the reply finds it. A constant
// number of store operations per turn, whatever the session's length: at most two reads to find the turn this
// one continues, and one create-if-absent that writes the record with its entry and its two index entries (a
// read, a re-queue and the index again when it was already there). The reads and the conversation's hash depend
// on the request alone, so the gateway begins them while the engine answers (`prepare`); after the answer only
// the write is left. Nothing here talks to Temporal: the relay delivers the entry (outbox-relay.ts).

import { z } from 'zod';
import { turnSampleId } from '../core/sample-id.js';
import { type TurnRecord, turnRecordKey } from '../core/turn-record.js';
import type { TurnPointer, TurnRef } from '../core/types.js';
import type { OutboxEntry } from '../store/outbox.js';
import type { AlongsideWrite, SampleStore } from '../store/sample-store.js';
import {
  type ConversationIdentity,
  conversationIdentity,
  type ReplyKeys,
  replyKeysOfTurn,
  turnDigest,
} from './conversation-identity.js';
import { DEFAULT_RETRY, type RetryOptions, withRetry } from './retry.js';
import type {
  ContinuedTurn,
  PreparedTurn,
  RecordedTurn,
  RecordOptions,
  TurnDraft,
  TurnLookup,
  TurnRequest,
} from './turn-recorder.js';

/** Store data is a boundary too: an index entry that does not parse is ignored, not trusted. */
const turnPointerSchema = z.object({
  sampleId: z.string().min(1),
  turn: z.number().int().min(1),
  policyVersion: z.number().int().min(0),
  prefixHash: z.string().regex(/^[0-9a-f]{64}$/),
  recordedAt: z.string().min(1),
});

/** Key of the index entry that finds a turn by its reply and the exact prefix it answered. */
export function continuationIndexKey(sessionId: string, key: string): string {
  return ['continuations', sessionId, key].map(encodeURIComponent).join('/');
}

/** Key of the index entry that finds the latest turn of a session that gave a reply. */
export function replyIndexKey(sessionId: string, key: string): string {
  return ['replies', sessionId, key].map(encodeURIComponent).join('/');
}

export interface TurnPersistenceOptions {
  retry?: RetryOptions;
  /** The outbox entry that hands a turn to its session workflow, written with its record. */
  outboxEntry: (ref: TurnRef) => OutboxEntry;
  clock?: () => Date;
}

export class TurnPersistence {
  private readonly retry: RetryOptions;
  private readonly clock: () => Date;

  constructor(
    private readonly store: SampleStore,
    private readonly options: TurnPersistenceOptions,
  ) {
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.clock = options.clock ?? (() => new Date());
  }

  /**
   * What recording a turn needs from its request alone: the conversation's identity (a hash over every message)
   * and the turn it continues (up to four store reads), begun while the engine answers so that neither waits
   * after the answer. Never rejects: on failure `persist` does the work itself.
   */
  prepare(request: TurnRequest, options: Pick<RecordOptions, 'legacySessionId'> = {}): PreparedTurn {
    const lookup = (async () => {
      // After the current turn of the event loop: the engine request this turn is sending leaves first.
      await new Promise((resolve) => setImmediate(resolve));
      const identity = conversationIdentity(request.messages, request.tools);
      return { identity, ...(await this.continued(request.sessionId, identity, options.legacySessionId)) };
    })().catch(() => null);
    return { request, lookup };
  }

  async persist(given: TurnDraft, options: RecordOptions = {}): Promise<RecordedTurn> {
    const { identity, sessionId, found } = await this.lookupFor(given, options);
    const draft = sessionId === given.sessionId ? given : { ...given, sessionId };
    const digest = turnDigest(identity.prefixHash, draft.response, draft.responseIds);
    const record: TurnRecord = {
      ...draft,
      turn: identity.position,
      sampleId: turnSampleId(draft.sessionId, identity.position, digest),
      prefixHash: identity.prefixHash,
      continues: found.pointer,
      recordedAt: this.clock().toISOString(),
    };
    const key = turnRecordKey(record.sampleId);
    if (key === null) throw new Error(`unparseable sample id ${record.sampleId}`);

    const entry = this.options.outboxEntry(turnRefOf(record));
    // A new turn's entry and index are written with its record (one transaction in PostgreSQL).
    const created = await this.io(() =>
      this.store.putIfAbsent(key, record, { outbox: entry, alongside: indexWrites(record, false) }),
    );
    if (!created) {
      // The same request answered with the same tokens (a retry with a seed, a second gateway): one turn. Its
      // entry is queued again (a record written just before a crash gets its entry this way; a turn already
      // delivered is delivered again, which the session ignores).
      const existing = await this.io(() => this.store.get<TurnRecord>(key));
      if (existing === undefined) throw new Error(`turn record ${key} vanished while it was being written`);
      const again = this.options.outboxEntry(turnRefOf(existing));
      await this.io(() => this.store.outbox.enqueue(again));
      await Promise.all(
        indexWrites(existing, true).map((write) =>
          this.io(async () => {
            if (write.ifAbsent) await this.store.putIfAbsent(write.key, write.value);
            else await this.store.put(write.key, write.value);
          }),
        ),
      );
      return { ref: turnRefOf(existing), duplicate: true, pairing: found.pairing };
    }
    return { ref: turnRefOf(record), duplicate: false, pairing: found.pairing };
  }

  /**
   * The request's identity and the turn it continues: as prepared when the draft is that request's, except that
   * a turn not found then is looked for again (another gateway's record may have become visible meanwhile).
   */
  private async lookupFor(draft: TurnDraft, options: RecordOptions): Promise<TurnLookup> {
    const prepared = options.prepared;
    const lookup =
      prepared &&
      prepared.request.sessionId === draft.sessionId &&
      prepared.request.messages === draft.messages &&
      prepared.request.tools === draft.tools
        ? await prepared.lookup
        : null;
    const identity = lookup?.identity ?? conversationIdentity(draft.messages, draft.tools);
    if (lookup && lookup.found.pairing !== 'unmatched') return lookup;
    return { identity, ...(await this.continued(draft.sessionId, identity, options.legacySessionId)) };
  }

  /**
   * The turn this request continues, in its session or else in the older-form session it may have begun in
   * (where the turn is then recorded).
   */
  private async continued(
    sessionId: string,
    identity: ConversationIdentity,
    legacy: string | null | undefined,
  ): Promise<{ sessionId: string; found: ContinuedTurn }> {
    const found = await this.findContinued(sessionId, identity.kept);
    if (found.pairing === 'unmatched' && legacy && legacy !== sessionId) {
      // A conversation begun under an older derived id: it continues there, where the turn it keeps is.
      const before = await this.findContinued(legacy, identity.kept);
      if (before.pointer !== null) return { sessionId: legacy, found: before };
    }
    return { sessionId, found };
  }

  /** The turn whose reply this request keeps: by reply and exact prefix, else by reply alone. */
  private async findContinued(sessionId: string, kept: ReplyKeys | null): Promise<ContinuedTurn> {
    if (kept === null) return { pointer: null, pairing: 'none' };
    const exact = await this.readPointer(continuationIndexKey(sessionId, kept.continuationKey));
    if (exact) return { pointer: exact, pairing: 'continuation' };
    const byReply = await this.readPointer(replyIndexKey(sessionId, kept.replyKey));
    if (byReply) return { pointer: byReply, pairing: 'reply' };
    return { pointer: null, pairing: 'unmatched' };
  }

  private async readPointer(key: string): Promise<TurnPointer | null> {
    // An index entry is small and, for a conversation that goes on, was written moments ago.
    const parsed = turnPointerSchema.safeParse(await this.io(() => this.store.get(key, { small: true })));
    return parsed.success ? parsed.data : null;
  }

  private io<T>(operation: () => Promise<T>): Promise<T> {
    return withRetry(operation, this.retry);
  }
}

/**
 * The index entries of a turn, by its reply. The exact entry is create-if-absent (two turns with the same
 * prefix and the same reply are interchangeable; the first stays). The reply-only entry names the latest turn
 * with that reply, so a compacted conversation pairs with its newest turn; a duplicate only restores a
 * missing one.
 */
function indexWrites(record: TurnRecord, duplicate: boolean): AlongsideWrite[] {
  const keys = replyKeysOfTurn(record.prefixHash, record.response);
  const pointer = turnPointerOf(record);
  return [
    { key: continuationIndexKey(record.sessionId, keys.continuationKey), value: pointer, ifAbsent: true },
    { key: replyIndexKey(record.sessionId, keys.replyKey), value: pointer, ifAbsent: duplicate },
  ];
}

export function turnPointerOf(record: TurnRecord): TurnPointer {
  return {
    sampleId: record.sampleId,
    turn: record.turn,
    policyVersion: record.policyVersion,
    prefixHash: record.prefixHash,
    recordedAt: record.recordedAt,
  };
}

export function turnRefOf(record: TurnRecord): TurnRef {
  return {
    sessionId: record.sessionId,
    turn: record.turn,
    sampleId: record.sampleId,
    policyVersion: record.policyVersion,
    kind: 'main',
    prefixHash: record.prefixHash,
    recordedAt: record.recordedAt,
    continues: record.continues,
  };
}
