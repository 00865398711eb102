// Later scorings of a turn in a training run (explicit feedback that came after the turn was scored): the
// scoring that stands replaces the turn's earlier sample while that has not trained (an exclusion becomes a
// sample, a sample gets the reward and teacher the person gave); once the turn has trained, or while it is in
// the step being trained, the later scoring is kept against the version it trained into, for people to see.
// Deterministic state only: the training run asks it and applies the answer.

import type { Amendment } from '../core/types.js';
import type { AmendmentsCarry, FeedbackAfterTraining, LineageEntry } from './training-signals.js';

const ACCEPTED_KEPT = 2_000;
const REPLACED_KEPT = 5_000;
const AFTER_TRAINING_KEPT = 100;

/** What the run does with a later scoring. */
export type AmendmentDecision =
  | { kind: 'ignore' }
  | { kind: 'after-training'; version: number }
  /** Remove these waiting samples (the turn's earlier scorings) and take this one instead. */
  | { kind: 'replace'; remove: ReadonlySet<string> };

export class FeedbackAmendments {
  private readonly accepted: AmendmentsCarry['accepted'];
  private readonly replaced: string[];
  private readonly replacedSet: Set<string>;
  private readonly afterTraining: FeedbackAfterTraining[];
  private applied: number;

  constructor(carried: AmendmentsCarry | undefined) {
    this.accepted = (carried?.accepted ?? []).map((entry) => ({ ...entry }));
    this.replaced = [...(carried?.replaced ?? [])];
    this.replacedSet = new Set(this.replaced);
    this.afterTraining = (carried?.afterTraining ?? []).map((entry) => ({ ...entry }));
    this.applied = carried?.applied ?? 0;
  }

  /**
   * Decides about the later scoring `amendmentId` of a turn; `trainedIn` says in which version (if any) one of
   * the given sample ids trained, counting the step being trained now.
   */
  decide(
    amendmentId: string,
    amends: Amendment,
    trainedIn: (sampleIds: ReadonlySet<string>) => number | null,
  ): AmendmentDecision {
    const earlier = this.accepted.find((entry) => entry.sampleId === amends.sampleId);
    // A scoring that saw less than the one standing (they can arrive out of order) changes nothing.
    if (earlier && earlier.revision > amends.revision) return { kind: 'ignore' };
    const ids = new Set([amends.sampleId, ...(earlier ? [earlier.acceptedId] : [])]);
    const version = trainedIn(ids);
    if (version !== null) {
      this.afterTraining.push({
        sampleId: amends.sampleId,
        amendmentId,
        version,
        feedbackIds: [...amends.feedbackIds],
      });
      if (this.afterTraining.length > AFTER_TRAINING_KEPT)
        this.afterTraining.splice(0, this.afterTraining.length - AFTER_TRAINING_KEPT);
      return { kind: 'after-training', version };
    }
    if (earlier) {
      earlier.acceptedId = amendmentId;
      earlier.revision = amends.revision;
    } else {
      this.accepted.push({ sampleId: amends.sampleId, acceptedId: amendmentId, revision: amends.revision });
      if (this.accepted.length > ACCEPTED_KEPT) this.accepted.splice(0, this.accepted.length - ACCEPTED_KEPT);
    }
    for (const id of ids) this.markReplaced(id);
    this.applied++;
    return { kind: 'replace', remove: ids };
  }

  /** Whether a waiting sample was replaced by a later scoring of its turn (it must not train). */
  isReplaced(sampleId: string): boolean {
    return this.replacedSet.has(sampleId);
  }

  status(): { amended: number; afterTraining: FeedbackAfterTraining[] } {
    return { amended: this.applied, afterTraining: this.afterTraining.map((entry) => ({ ...entry })) };
  }

  carry(): AmendmentsCarry {
    return {
      accepted: this.accepted.map((entry) => ({ ...entry })),
      replaced: [...this.replaced],
      afterTraining: this.afterTraining.map((entry) => ({ ...entry })),
      applied: this.applied,
    };
  }

  private markReplaced(sampleId: string): void {
    if (this.replacedSet.has(sampleId)) return;
    this.replaced.push(sampleId);
    this.replacedSet.add(sampleId);
    if (this.replaced.length > REPLACED_KEPT) {
      for (const old of this.replaced.splice(0, this.replaced.length - REPLACED_KEPT))
        this.replacedSet.delete(old);
    }
  }
}

/** The version in which one of `sampleIds` trained, from the run's lineage (latest first); null if none did. */
export function trainedVersionIn(
  lineage: readonly LineageEntry[],
  sampleIds: ReadonlySet<string>,
): number | null {
  for (let i = lineage.length - 1; i >= 0; i--) {
    const entry = lineage[i];
    if (entry?.sampleIds.some((id) => sampleIds.has(id))) return entry.version;
  }
  return null;
}
