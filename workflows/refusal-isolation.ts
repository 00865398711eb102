// Finding the samples that make the trainer refuse a batch, so that only they become exclusions. A refusal
// that names its samples excludes them and the step is retried with the rest of the batch. One that does not
// (a non-finite gradient, a batch slime cannot take) is bisected: the run trains the first half of the
// suspects as a step of its own; a refused part is halved again, a refused single sample is the culprit;
// each part that trains is a normal step (its own version and lineage). The suspects stay at the front of
// the queue throughout, in order, so each part is the queue's head (with group training, where a batch may
// skip samples the cap held back, the run takes each part by its ids instead).

/** Carried over continue-as-new while a refused batch is being split. */
export interface IsolationCarry {
  /** The refused batch's samples not yet trained or excluded, in queue order (the queue's head). */
  suspects: string[];
  /** How many of them the next step trains. */
  probe: number;
}

/** What a refusal of `batch` means for the samples. */
export type RefusalOutcome =
  /** These samples are the cause: exclude them; the step is retried with the rest of the batch. */
  | { exclude: string[] }
  /** Nothing is excluded yet: the next step trains a smaller part. */
  | { split: true };

export class RefusalIsolation {
  private suspects: string[];
  private probe: number;

  constructor(carried: IsolationCarry | null | undefined) {
    this.suspects = [...(carried?.suspects ?? [])];
    this.probe = carried?.probe ?? 0;
  }

  /** The size of the next batch: a part of the suspects while splitting, else the configured size. */
  batchSize(configured: number): number {
    return this.suspects.length > 0 ? Math.max(1, Math.min(this.probe, this.suspects.length)) : configured;
  }

  /** After the trainer refused `batch`; `named` are the samples the refusal names (may be empty). */
  refused(batch: readonly string[], named: readonly string[]): RefusalOutcome {
    const inBatch = named.filter((id) => batch.includes(id));
    if (inBatch.length > 0 || batch.length === 1) {
      const exclude = inBatch.length > 0 ? inBatch : [...batch];
      if (this.suspects.length === 0) this.suspects = batch.filter((id) => !exclude.includes(id));
      else this.forget(exclude);
      // The rest of the refused batch (or part) is tried whole next.
      this.probe = this.suspects.length;
      return { exclude };
    }
    if (this.suspects.length === 0) this.suspects = [...batch];
    this.probe = Math.ceil(batch.length / 2);
    return { split: true };
  }

  /** The suspects the next step trains, in queue order; null when no refused batch is being split. */
  nextPart(): string[] | null {
    return this.suspects.length > 0 ? this.suspects.slice(0, this.batchSize(0)) : null;
  }

  /** After `batch` trained: its samples are cleared, and the remaining suspects are tried together. */
  trained(batch: readonly string[]): void {
    if (this.suspects.length === 0) return;
    this.forget(batch);
    this.probe = this.suspects.length;
  }

  /** Samples that left the queue another way (dropped as stale). */
  forget(ids: readonly string[]): void {
    if (this.suspects.length === 0) return;
    const gone = new Set(ids);
    this.suspects = this.suspects.filter((id) => !gone.has(id));
    if (this.suspects.length === 0) this.probe = 0;
  }

  carry(): IsolationCarry | null {
    return this.suspects.length > 0 ? { suspects: [...this.suspects], probe: this.probe } : null;
  }
}
