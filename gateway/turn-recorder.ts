// The durable hand-off of a main turn: once `record` resolves, the turn and its outbox entry are durable in
// the sample store, so the response may complete; the relay delivers it to its session workflow later.

import type { ImageDigest, StoredImage } from '../core/image-parts.js';
import type { TurnRecord } from '../core/turn-record.js';
import type { TurnPointer, TurnRef } from '../core/types.js';
import type { ConversationIdentity } from './conversation-identity.js';

/** Everything a turn record holds except what the recorder decides: its identity, pairing and time. */
export type TurnDraft = Omit<TurnRecord, 'turn' | 'sampleId' | 'prefixHash' | 'continues' | 'recordedAt'>;

/**
 * How the turn this request continues was found: by its reply and exact prefix, by its reply alone (the prefix
 * changed: compaction), not at all although the request keeps a reply (`unmatched`: a reply the gateway never
 * recorded, or one the client rewrote), or there was no reply to look for (`none`: a first turn).
 */
export type Pairing = 'continuation' | 'reply' | 'unmatched' | 'none';

export interface RecordedTurn {
  /** What the session workflow receives. */
  ref: TurnRef;
  /** True when this exact request and response were already recorded: that turn is returned. */
  duplicate: boolean;
  pairing: Pairing;
}

/** The turn a request continues, and how it was found. */
export interface ContinuedTurn {
  pointer: TurnPointer | null;
  pairing: Pairing;
}

/** A request's identity and the turn it continues. */
export interface TurnLookup {
  identity: ConversationIdentity;
  /** The session the turn is recorded in (an older-form session where the conversation began there). */
  sessionId: string;
  found: ContinuedTurn;
}

/** What a turn's record takes from its request alone. */
export interface TurnRequest {
  sessionId: string;
  messages: TurnDraft['messages'];
  tools: TurnDraft['tools'];
}

/**
 * A lookup begun while the engine answers (`TurnRecorder.prepare`); its lookup is null when it failed. `record`
 * uses it for a draft with that very request's session, messages and tools (the same objects).
 */
export interface PreparedTurn {
  request: TurnRequest;
  lookup: Promise<TurnLookup | null>;
}

export interface RecordOptions {
  /**
   * Another session the conversation may have begun in (a derived id of an older form): when the turn this one
   * continues is found there and not in `draft.sessionId`, the turn is recorded there.
   */
  legacySessionId?: string | null;
  /** The bytes of the images the draft's `image_ref` parts name: stored before the record that names them. */
  images?: ReadonlyMap<ImageDigest, StoredImage>;
  /** What `prepare` began for this request. */
  prepared?: PreparedTurn | null;
}

export interface TurnRecorder {
  /**
   * Begins what recording needs from the request alone (its identity, the turn it continues), so that it runs
   * while the engine answers rather than after; pass the result to `record` in `options.prepared`.
   */
  prepare?(request: TurnRequest, options?: Pick<RecordOptions, 'legacySessionId'>): PreparedTurn;
  record(draft: TurnDraft, options?: RecordOptions): Promise<RecordedTurn>;
  /** The client said the session is over (`X-Session-Done`). */
  endSession(sessionId: string): Promise<void>;
}
