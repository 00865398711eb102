// How many conversations the learning demo sends next, read from the run's own sample counts rather than from a
// timer. A neutral rating trains nothing (the demo's first always is: its baseline starts at that reply's score),
// so a batch may need more conversations than its size; but a step that is only slow must draw none, or the
// extra replies shift every later batch and the same demo trains on other replies on a busier machine.

/** The training run's sample counts (its status: `pendingSamples`, `samplesTrained`, `samplesExcluded`). */
export interface RunSampleCounts {
  /** Waiting for a batch, or in the batch being trained (a batch leaves the queue once its version is recorded). */
  pending: number;
  trained: number;
  excluded: number;
}

export class DemoBatchFill {
  private sent = 0;

  constructor(
    /** The counts before the demo's first conversation. */
    private readonly start: RunSampleCounts,
    private readonly batchSize: number,
  ) {}

  /** One more conversation rated and posted. */
  recordSent(): void {
    this.sent++;
  }

  /** Of the demo's rated conversations, those the run has not counted yet (their scoring is under way). */
  unscored(now: RunSampleCounts): number {
    const { start } = this;
    const counted =
      now.pending - start.pending + (now.trained - start.trained) + (now.excluded - start.excluded);
    return Math.max(0, this.sent - counted);
  }

  /**
   * Conversations to send now: none while a rating is still being scored (it may complete the batch) or while a
   * full batch waits or trains; otherwise what the batch lacks.
   */
  toSend(now: RunSampleCounts): number {
    if (this.unscored(now) > 0) return 0;
    return Math.max(0, this.batchSize - now.pending);
  }

  describe(now: RunSampleCounts | null): string {
    if (now === null) return `${this.sent} conversations sent; the run reports no counts`;
    return `${this.sent} conversations sent, ${this.unscored(now)} not yet scored, ${now.pending} of a batch of ${this.batchSize} waiting`;
  }
}
