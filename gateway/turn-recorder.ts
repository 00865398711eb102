// The durable hand-off of a main turn: once `record` resolves, the turn and its outbox entry are durable in
// the sample store, so the response may complete; the relay delivers it to its session workflow later.

import type { TurnRecord } from '../core/turn-record.js';

/** Everything a turn record holds except what the recorder decides: its number, id, hash and time. */
export type TurnDraft = Omit<TurnRecord, 'turn' | 'sampleId' | 'requestHash' | 'recordedAt'>;

export interface RecordedTurn {
  turn: number;
  sampleId: string;
  /** True when the same request was already recorded (a client retry): that earlier turn is returned. */
  duplicate: boolean;
}

export interface TurnRecorder {
  record(draft: TurnDraft): Promise<RecordedTurn>;
  /** The client said the session is over (`X-Session-Done`). */
  endSession(sessionId: string): Promise<void>;
}
