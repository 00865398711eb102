// The env host's periodic sweep: removes every managed container whose lease ended. Containers also end
// themselves when their lease runs out (sandbox-lease.ts); the sweep catches what that misses (a keeper that
// could not run, containers left by a Docker restart) and is what an operator can call by hand.

import type { SandboxProvider } from './sandbox.js';

export interface SandboxReaperOptions {
  /** Time between sweeps; default 30 s. */
  intervalMs?: number;
  /** Told the container ids each sweep removed (only when it removed some). */
  onReaped?: (containerIds: string[]) => void;
  /** Told when a sweep failed; the next sweep runs anyway. */
  onError?: (error: unknown) => void;
  /** The time leases are compared with; default `Date.now` (tests move it forward). */
  clock?: () => number;
}

export interface SandboxReaper {
  /** Runs one sweep now (waits for a sweep already running instead of overlapping it). */
  sweep(): Promise<string[]>;
  /** Stops the timer and waits for a running sweep to finish. */
  stop(): Promise<void>;
}

/** Starts sweeping at once and then every `intervalMs`; the timer does not keep the process alive. */
export function startSandboxReaper(
  provider: SandboxProvider,
  options: SandboxReaperOptions = {},
): SandboxReaper {
  const intervalMs = options.intervalMs ?? 30_000;
  const clock = options.clock ?? Date.now;
  let running: Promise<string[]> | null = null;
  let stopped = false;

  const sweep = (): Promise<string[]> => {
    if (running !== null) return running;
    running = provider
      .reapExpired(clock())
      .then((ids) => {
        if (ids.length > 0) options.onReaped?.(ids);
        return ids;
      })
      .catch((error: unknown) => {
        options.onError?.(error);
        return [];
      })
      .finally(() => {
        running = null;
      });
    return running;
  };

  const timer = setInterval(() => {
    if (!stopped) void sweep();
  }, intervalMs);
  timer.unref();
  void sweep();

  return {
    sweep,
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (running !== null) await running;
    },
  };
}
