// Which turn a session settles, and how, as turns arrive: the state a session workflow keeps, as a plain class
// of deterministic code (no clock of its own: the workflow passes its time in), so it can be tested alone.
//
// The gateway tells each turn which earlier turn it continues (the one whose reply the request kept), so the
// order turns arrive in does not matter and a branch never pairs with the other branch's last turn:
// - a turn that is continued is scored against the continuing turn (its next state is that request's last
//   message); a second continuation of the same turn (an edited message) changes nothing;
// - when a turn is continued, the other open turns with the same prefix (a retry, a regenerate) are settled as
//   superseded: the conversation went on from another answer to the same request;
// - a turn nobody continued is settled without a next state when the session ends, when it is older than the
//   reopen horizon, or when too many turns are open; among open siblings only the latest is, the earlier ones
//   are superseded by it.
// Refs from gateways that numbered turns (no `continues` field) are paired in turn order, as they were.

import type { TurnPointer, TurnRef } from './types.js';

/** What the session does with a turn. */
export type Settlement =
  | { kind: 'next-state'; turn: TurnRef; nextSampleId: string }
  | { kind: 'superseded'; turn: TurnRef; by: string }
  | { kind: 'no-next-state'; turn: TurnRef };

export interface OpenTurn {
  ref: TurnRef;
  /** Workflow time (ms) the turn arrived. */
  arrivedAt: number;
}

/** Plain data, carried over continue-as-new. */
export interface PairingState {
  /** Turns waiting for their next state, in arrival order. */
  open: OpenTurn[];
  /** Sample ids settled lately, oldest first: a late duplicate of one of them is ignored. */
  settled: string[];
  /** Workflow time (ms) of the latest turn; the reopen horizon runs from it. */
  lastTurnAt: number | null;
}

export interface PairingLimits {
  /** How long a turn may wait for its next state. */
  horizonMs: number;
  /** Most open turns; beyond it the oldest is settled without a next state. */
  maxOpenTurns: number;
  /** How many settled ids are remembered for de-duplication (Temporal's workflow ids catch the rest). */
  rememberSettled: number;
}

export const DEFAULT_PAIRING_LIMITS: Omit<PairingLimits, 'horizonMs'> = {
  maxOpenTurns: 200,
  rememberSettled: 256,
};

export function emptyPairingState(): PairingState {
  return { open: [], settled: [], lastTurnAt: null };
}

export class SessionPairing {
  private readonly open: OpenTurn[];
  private readonly settled: string[];
  private lastTurnAt: number | null;

  constructor(
    state: PairingState,
    private readonly limits: PairingLimits,
  ) {
    this.open = state.open.map((turn) => ({ ...turn }));
    this.settled = [...state.settled];
    this.lastTurnAt = state.lastTurnAt;
  }

  get openTurns(): readonly OpenTurn[] {
    return this.open;
  }

  get latestTurnAt(): number | null {
    return this.lastTurnAt;
  }

  state(): PairingState {
    return {
      open: this.open.map((turn) => ({ ...turn })),
      settled: [...this.settled],
      lastTurnAt: this.lastTurnAt,
    };
  }

  /** A turn arrived; returns whether it is new (not a duplicate delivery) and what to settle now, in order. */
  receive(ref: TurnRef, now: number): { fresh: boolean; settlements: Settlement[] } {
    if (ref.kind !== 'main' || this.isKnown(ref.sampleId)) return { fresh: false, settlements: [] };
    this.lastTurnAt = now;
    const out: Settlement[] = [];
    if (ref.continues === undefined) out.push(...this.pairInTurnOrder(ref));
    else if (ref.continues !== null) out.push(...this.pairWithContinued(ref, ref.continues, now));
    this.open.push({ ref, arrivedAt: now });
    out.push(...this.expire(now));
    return { fresh: true, settlements: out };
  }

  /**
   * Takes an open turn out to be scored now (it has explicit feedback); null when it is not open. A reply that
   * continues it later finds it settled.
   */
  takeOpen(sampleId: string): TurnRef | null {
    const open = this.open.find((turn) => turn.ref.sampleId === sampleId);
    if (!open) return null;
    this.remove(sampleId);
    return open.ref;
  }

  /** The session is over: every open turn is settled, the latest of each group of siblings without a next state. */
  closeAll(): Settlement[] {
    return this.settleWithoutNext([...this.open]);
  }

  private pairWithContinued(ref: TurnRef, continued: TurnPointer, now: number): Settlement[] {
    const waiting = this.open.find((turn) => turn.ref.sampleId === continued.sampleId);
    if (!waiting && this.settled.includes(continued.sampleId)) return [];
    // Not here: its own delivery is late or lost, or it belongs to an earlier run of this session. Within the
    // horizon it is scored now (a turn already scored is refused by its workflow id); past it, it was settled.
    if (!waiting && now - Date.parse(continued.recordedAt) > this.limits.horizonMs) return [];
    const turn = waiting?.ref ?? refOfPointer(ref.sessionId, continued);
    const out: Settlement[] = [{ kind: 'next-state', turn, nextSampleId: ref.sampleId }];
    this.remove(turn.sampleId);
    for (const sibling of this.open.filter((t) => samePrefix(t.ref, turn))) {
      out.push({ kind: 'superseded', turn: sibling.ref, by: turn.sampleId });
      this.remove(sibling.ref.sampleId);
    }
    return out;
  }

  /** A ref without `continues`: every earlier open numbered turn pairs with the one after it. */
  private pairInTurnOrder(ref: TurnRef): Settlement[] {
    const numbered = [...this.open.filter((t) => t.ref.continues === undefined).map((t) => t.ref), ref].sort(
      (a, b) => a.turn - b.turn,
    );
    const out: Settlement[] = [];
    for (let i = 0; i + 1 < numbered.length; i++) {
      const turn = numbered[i] as TurnRef;
      if (turn === ref) continue;
      out.push({ kind: 'next-state', turn, nextSampleId: (numbered[i + 1] as TurnRef).sampleId });
      this.remove(turn.sampleId);
    }
    return out;
  }

  /** Open turns past the horizon, and the oldest beyond the open-turn limit. */
  private expire(now: number): Settlement[] {
    const expired = this.open.filter((turn) => now - turn.arrivedAt > this.limits.horizonMs);
    const excess = this.open.length - expired.length - this.limits.maxOpenTurns;
    if (excess > 0) expired.push(...this.open.filter((turn) => !expired.includes(turn)).slice(0, excess));
    return this.settleWithoutNext(expired);
  }

  /** Settles turns that will get no next state: superseded by a later open sibling, else without a next state. */
  private settleWithoutNext(turns: OpenTurn[]): Settlement[] {
    const out: Settlement[] = [];
    for (const turn of turns) {
      const later = [...this.open].reverse().find((t) => t !== turn && samePrefix(t.ref, turn.ref));
      const laterIndex = later ? this.open.indexOf(later) : -1;
      out.push(
        later && laterIndex > this.open.indexOf(turn)
          ? { kind: 'superseded', turn: turn.ref, by: later.ref.sampleId }
          : { kind: 'no-next-state', turn: turn.ref },
      );
    }
    for (const turn of turns) this.remove(turn.ref.sampleId);
    return out;
  }

  private isKnown(sampleId: string): boolean {
    return this.settled.includes(sampleId) || this.open.some((turn) => turn.ref.sampleId === sampleId);
  }

  private remove(sampleId: string): void {
    const index = this.open.findIndex((turn) => turn.ref.sampleId === sampleId);
    if (index >= 0) this.open.splice(index, 1);
    this.settled.push(sampleId);
    if (this.settled.length > this.limits.rememberSettled)
      this.settled.splice(0, this.settled.length - this.limits.rememberSettled);
  }
}

/** Siblings: the same request prefix (numbered refs have none and are nobody's sibling). */
function samePrefix(a: TurnRef, b: TurnRef): boolean {
  return a.prefixHash !== undefined && a.prefixHash === b.prefixHash;
}

function refOfPointer(sessionId: string, pointer: TurnPointer): TurnRef {
  return {
    sessionId,
    turn: pointer.turn,
    sampleId: pointer.sampleId,
    policyVersion: pointer.policyVersion,
    kind: 'main',
    prefixHash: pointer.prefixHash,
    recordedAt: pointer.recordedAt,
  };
}
