// This process's garbage-collection pauses, from Node's performance timeline: how many of each kind fell inside
// a span of time and how long they took (the main thread's pause; the helper threads' share is in their CPU).

import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';

export type GcKind = 'scavenge' | 'mark-compact' | 'other';

interface Pause {
  start: number;
  duration: number;
  kind: GcKind;
}

export type GcTally = Record<GcKind, { count: number; ms: number }>;

export function emptyGcTally(): GcTally {
  return { scavenge: { count: 0, ms: 0 }, 'mark-compact': { count: 0, ms: 0 }, other: { count: 0, ms: 0 } };
}

function kindOf(code: number): GcKind {
  if (code === constants.NODE_PERFORMANCE_GC_MINOR) return 'scavenge';
  if (code === constants.NODE_PERFORMANCE_GC_MAJOR) return 'mark-compact';
  return 'other';
}

export class GcPauses {
  private pauses: Pause[] = [];
  private readonly observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
      this.pauses.push({
        start: entry.startTime,
        duration: entry.duration,
        kind: kindOf(detail?.kind ?? -1),
      });
    }
  });

  constructor() {
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /**
   * Adds the pauses that began between `from` and `to` (performance.now()) to `into`, once the timeline has
   * delivered them (entries come a moment after the pause), and forgets them.
   */
  async addSpan(from: number, to: number, into: GcTally): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 10));
    const kept: Pause[] = [];
    for (const pause of this.pauses) {
      if (pause.start < from) continue;
      if (pause.start > to) {
        kept.push(pause);
        continue;
      }
      into[pause.kind].count++;
      into[pause.kind].ms += pause.duration;
    }
    this.pauses = kept;
  }

  close(): void {
    this.observer.disconnect();
  }
}
