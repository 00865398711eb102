// The session's pairing state alone: what is settled, and how, as turns arrive in any order.
import { describe, expect, it } from 'vitest';
import { emptyPairingState, SessionPairing, type Settlement } from '../../core/session-pairing.js';
import type { TurnPointer, TurnRef } from '../../core/types.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-01-01T00:00:00Z');

function turn(id: string, prefix: string, continues: TurnRef | null, position = 1): TurnRef {
  return {
    sessionId: 's',
    turn: position,
    sampleId: id,
    policyVersion: 0,
    kind: 'main',
    prefixHash: prefix,
    recordedAt: new Date(T0).toISOString(),
    continues: continues && pointer(continues),
  };
}

function pointer(ref: TurnRef): TurnPointer {
  return {
    sampleId: ref.sampleId,
    turn: ref.turn,
    policyVersion: ref.policyVersion,
    prefixHash: ref.prefixHash ?? '',
    recordedAt: ref.recordedAt ?? '',
  };
}

const brief = (settlements: Settlement[]) =>
  settlements.map((s) =>
    s.kind === 'next-state'
      ? `${s.turn.sampleId}->${s.nextSampleId}`
      : s.kind === 'superseded'
        ? `${s.turn.sampleId} superseded by ${s.by}`
        : `${s.turn.sampleId} none`,
  );

const pairing = (horizonMs = 24 * HOUR, maxOpenTurns = 200) =>
  new SessionPairing(emptyPairingState(), { horizonMs, maxOpenTurns, rememberSettled: 256 });

describe('SessionPairing', () => {
  it('pairs a turn with the one that continues it, and supersedes its siblings', () => {
    const p = pairing();
    const first = turn('a', 'P1', null);
    const regenerated = turn('b', 'P1', null);
    const continuation = turn('c', 'P2', regenerated, 2);
    expect(brief(p.receive(first, T0).settlements)).toEqual([]);
    expect(brief(p.receive(regenerated, T0 + 1).settlements)).toEqual([]);
    expect(brief(p.receive(continuation, T0 + 2).settlements)).toEqual(['b->c', 'a superseded by b']);
    expect(p.openTurns.map((t) => t.ref.sampleId)).toEqual(['c']);
  });

  it('never pairs a branch with the other branch: an abandoned last turn waits and ends without a next state', () => {
    const p = pairing();
    const t1 = turn('t1', 'P1', null);
    const t2 = turn('t2', 'P2', t1, 2);
    const t3 = turn('t3', 'P3', t2, 3);
    // The user edits their message after t2's reply: the new branch continues t2 again.
    const edited = turn('t3b', 'P3b', t2, 3);
    const onEdited = turn('t4b', 'P4b', edited, 4);
    const log = [t1, t2, t3, edited, onEdited].flatMap((ref, i) => brief(p.receive(ref, T0 + i).settlements));
    expect(log).toEqual(['t1->t2', 't2->t3', 't3b->t4b']);
    expect(brief(p.closeAll())).toEqual(['t3 none', 't4b none']);
  });

  it('is indifferent to arrival order and to duplicate deliveries', () => {
    const p = pairing();
    const t1 = turn('t1', 'P1', null);
    const t2 = turn('t2', 'P2', t1, 2);
    // The continuation arrives first (a relay delivering out of order): t1 is scored from its pointer.
    expect(brief(p.receive(t2, T0).settlements)).toEqual(['t1->t2']);
    expect(p.receive(t1, T0 + 1)).toEqual({ fresh: false, settlements: [] });
    expect(p.receive(t2, T0 + 2)).toEqual({ fresh: false, settlements: [] });
    expect(p.openTurns.map((t) => t.ref.sampleId)).toEqual(['t2']);
  });

  it('at the end supersedes all but the latest of unanswered siblings', () => {
    const p = pairing();
    p.receive(turn('a', 'P1', null), T0);
    p.receive(turn('b', 'P1', null), T0 + 1);
    p.receive(turn('x', 'Q1', null), T0 + 2);
    expect(brief(p.closeAll())).toEqual(['a superseded by b', 'b none', 'x none']);
  });

  it('lets a late reply pair within the horizon and not after it', () => {
    const p = pairing(24 * HOUR);
    const t1 = turn('t1', 'P1', null);
    p.receive(t1, T0);
    expect(brief(p.receive(turn('t2', 'P2', t1, 2), T0 + 5 * HOUR).settlements)).toEqual(['t1->t2']);

    // A fresh run (the session ended past its horizon): the continued turn is not here and too old.
    const fresh = pairing(24 * HOUR);
    expect(brief(fresh.receive(turn('t3', 'P3', t1, 2), T0 + 25 * HOUR).settlements)).toEqual([]);
    // Within the horizon it would be scored from its pointer (its workflow id refuses a second scoring).
    const early = pairing(24 * HOUR);
    expect(brief(early.receive(turn('t3', 'P3', t1, 2), T0 + 2 * HOUR).settlements)).toEqual(['t1->t3']);
  });

  it('settles open turns older than the horizon, and the oldest beyond the open-turn limit', () => {
    const p = pairing(HOUR, 2);
    p.receive(turn('old', 'P0', null), T0);
    expect(brief(p.receive(turn('new', 'P1', null), T0 + 2 * HOUR).settlements)).toEqual(['old none']);
    p.receive(turn('n2', 'P2', null), T0 + 2 * HOUR + 1);
    expect(brief(p.receive(turn('n3', 'P3', null), T0 + 2 * HOUR + 2).settlements)).toEqual(['new none']);
    expect(p.openTurns.map((t) => t.ref.sampleId)).toEqual(['n2', 'n3']);
  });

  it('pairs refs without `continues` (from gateways that numbered turns) in turn order', () => {
    const p = pairing();
    const numbered = (n: number): TurnRef => ({
      sessionId: 's',
      turn: n,
      sampleId: `s:${n}`,
      policyVersion: 0,
      kind: 'main',
    });
    expect(brief(p.receive(numbered(1), T0).settlements)).toEqual([]);
    expect(brief(p.receive(numbered(2), T0 + 1).settlements)).toEqual(['s:1->s:2']);
    expect(brief(p.receive(numbered(3), T0 + 2).settlements)).toEqual(['s:2->s:3']);
    expect(brief(p.closeAll())).toEqual(['s:3 none']);
  });

  it('survives its own state as plain data (continue-as-new)', () => {
    const p = pairing();
    const t1 = turn('t1', 'P1', null);
    p.receive(t1, T0);
    const carried = JSON.parse(JSON.stringify(p.state()));
    const q = new SessionPairing(carried, { horizonMs: 24 * HOUR, maxOpenTurns: 200, rememberSettled: 256 });
    expect(brief(q.receive(turn('t2', 'P2', t1, 2), T0 + 1).settlements)).toEqual(['t1->t2']);
    expect(q.latestTurnAt).toBe(T0 + 1);
  });
});
