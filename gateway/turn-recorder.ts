// The durable hand-off of a main turn: once `record` resolves, the turn and its outbox entry are durable in
// the sample store, so the response may complete; the relay delivers it to its session workflow later.

import type { ImageDigest, StoredImage } from '../core/image-parts.js';
import type { TurnRecord } from '../core/turn-record.js';
import type { TurnRef } from '../core/types.js';

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

export interface RecordOptions {
  /**
   * Another session the conversation may have begun in (a derived id of an older form): when the turn this one
   * continues is found there and not in `draft.sessionId`, the turn is recorded there.
   */
  legacySessionId?: string | null;
  /** The bytes of the images the draft's `image_ref` parts name: stored before the record that names them. */
  images?: ReadonlyMap<ImageDigest, StoredImage>;
}

export interface TurnRecorder {
  record(draft: TurnDraft, options?: RecordOptions): Promise<RecordedTurn>;
  /** The client said the session is over (`X-Session-Done`). */
  endSession(sessionId: string): Promise<void>;
}
