// The learning demo sends conversations by the run's counts, not by a timer. The scenario: a demo on a busy
// machine, whose training step takes a minute, must send the same conversations as on an idle one; with a timer
// it sent an extra one every few seconds of a slow step, so every later batch held other replies and the same
// demo learned differently (on compose, a held version then decided the run). And a neutral rating, which trains
// nothing, must still be made up for, or the batch never fills.

import { describe, expect, it } from 'vitest';
import { DemoBatchFill, type RunSampleCounts } from '../../cli/demo-batch-fill.js';

const counts = (pending: number, trained = 0, excluded = 0): RunSampleCounts => ({
  pending,
  trained,
  excluded,
});

/** Sends what the fill asks for, as the demo does; returns how many. */
function send(fill: DemoBatchFill, now: RunSampleCounts): number {
  const n = fill.toSend(now);
  for (let i = 0; i < n; i++) fill.recordSent();
  return n;
}

describe('how many conversations the learning demo sends', () => {
  it('a batch first; one more for a neutral rating, once it is scored; none while the step trains, however long', () => {
    const fill = new DemoBatchFill(counts(0), 4);
    expect(send(fill, counts(0))).toBe(4);
    // Two ratings scored so far: the others may still fill the batch.
    expect(send(fill, counts(2))).toBe(0);
    // All four scored, the first one neutral (excluded): the batch lacks one.
    expect(send(fill, counts(3, 0, 1))).toBe(1);
    expect(send(fill, counts(3, 0, 1))).toBe(0); // the fifth not scored yet
    // The batch is full and trains; a slow step draws nothing, however often the demo looks.
    for (let look = 0; look < 100; look++) expect(send(fill, counts(4, 0, 1))).toBe(0);
    // The version is recorded (the batch leaves the queue as it counts as trained): the next batch.
    expect(send(fill, counts(0, 4, 1))).toBe(4);
    expect(fill.describe(counts(1, 4, 1))).toBe(
      '9 conversations sent, 3 not yet scored, 1 of a batch of 4 waiting',
    );
  });

  it("counts from the run's state when the demo starts: samples already waiting fill part of its first batch", () => {
    const fill = new DemoBatchFill(counts(3, 40, 7), 4);
    expect(send(fill, counts(3, 40, 7))).toBe(1);
    expect(send(fill, counts(3, 40, 7))).toBe(0);
    // The step trained the three old samples and the demo's: all the demo's ratings are counted.
    expect(send(fill, counts(0, 44, 7))).toBe(4);
  });
});
