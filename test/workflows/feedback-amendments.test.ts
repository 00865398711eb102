import { describe, expect, it } from 'vitest';
import { FeedbackAmendments, trainedVersionIn } from '../../workflows/feedback-amendments.js';
import type { LineageEntry } from '../../workflows/training-signals.js';

const turn = 'local/chat:1-0123456789abcdef';
const amends = (revision: number, feedbackIds: string[]) => ({ sampleId: turn, revision, feedbackIds });
const notTrained = () => null;

describe('later scorings of a turn in a training run', () => {
  it('keeps the scoring that saw the most feedback when two arrive out of order', () => {
    // A user sends 👍 then a correction; the second scoring (both) reaches the run before the first (👍 only).
    const run = new FeedbackAmendments(undefined);
    const both = run.decide(`${turn}~fb-b`, amends(4, ['fb-a', 'fb-b']), notTrained);
    expect(both).toEqual({ kind: 'replace', remove: new Set([turn]) });
    expect(run.decide(`${turn}~fb-a`, amends(2, ['fb-a']), notTrained)).toEqual({ kind: 'ignore' });
    // A third that saw more replaces the second too, which must not train either.
    const third = run.decide(`${turn}~next`, amends(5, ['fb-a', 'fb-b']), notTrained);
    expect(third).toEqual({ kind: 'replace', remove: new Set([turn, `${turn}~fb-b`]) });
    expect(run.isReplaced(turn)).toBe(true);
    expect(run.isReplaced(`${turn}~fb-b`)).toBe(true);
    expect(run.isReplaced(`${turn}~next`)).toBe(false);
    expect(run.status().amended).toBe(2);
  });

  it('keeps feedback that comes after training against the version the turn trained into, across continue-as-new', () => {
    // The turn trained in v3; the user's 👎 afterwards must not train it again, and must stay visible.
    const lineage = [{ version: 3, sampleIds: ['other', turn] }] as LineageEntry[];
    const run = new FeedbackAmendments(undefined);
    const decision = run.decide(`${turn}~fb-c`, amends(2, ['fb-c']), (ids) => trainedVersionIn(lineage, ids));
    expect(decision).toEqual({ kind: 'after-training', version: 3 });
    const next = new FeedbackAmendments(run.carry());
    expect(next.status().afterTraining).toEqual([
      { sampleId: turn, amendmentId: `${turn}~fb-c`, version: 3, feedbackIds: ['fb-c'] },
    ]);
    expect(next.isReplaced(turn)).toBe(false);
  });
});
