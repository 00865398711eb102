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

  describe(now: RunSampleCounts): string {
    return `${this.sent} conversations sent, ${this.unscored(now)} not yet scored, ${now.pending} of a batch of ${this.batchSize} waiting`;
  }
}

/** What the demo sees when it looks at the run: what it waits for, or the run's counts while it is not there. */
export type DemoLook<T> = { arrived: T } | { counts: RunSampleCounts };

/**
 * Converses as `fill` says until `look` finds what the demo waits for (a new version), looking again every
 * `pollMs` while there is nothing to send.
 */
export async function conversePast<T>(
  fill: DemoBatchFill,
  io: { look(): Promise<DemoLook<T>>; converse(): Promise<void> },
  timing: { pollMs: number; timeoutMs: number },
  waitingFor: string,
): Promise<T> {
  const deadline = Date.now() + timing.timeoutMs;
  let counts: RunSampleCounts = { pending: 0, trained: 0, excluded: 0 };
  while (Date.now() < deadline) {
    const seen = await io.look();
    if ('arrived' in seen) return seen.arrived;
    counts = seen.counts;
    const toSend = fill.toSend(counts);
    for (let i = 0; i < toSend; i++) {
      await io.converse();
      fill.recordSent();
    }
    if (toSend === 0) await new Promise((resolve) => setTimeout(resolve, timing.pollMs));
  }
  throw new Error(`no ${waitingFor} within ${timing.timeoutMs} ms (${fill.describe(counts)})`);
}
