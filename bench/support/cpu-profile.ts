// V8 CPU profiles of this process's main thread, taken from inside it (`node:inspector`) around a stretch of
// work, and read as the time each function took with what it called synchronously ("inclusive"), so that the
// profile covers exactly that stretch (a `--cpu-prof` file covers the whole process and its clock does not
// line up with the benchmark's own).

import { Session } from 'node:inspector/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Milliseconds per function (`name file`), counted once per sample however often it is on the stack; and under
 * `SELF` + `name file`, the samples where the function itself was running (the top of the stack).
 */
export type InclusiveTimes = Map<string, number>;

/** Prefix of a self-time key in `InclusiveTimes`. */
export const SELF = 'self: ';

export class CpuProfiler {
  private readonly session = new Session();

  /** `intervalUs`: the sampling interval (V8's default is 1000 µs). */
  static async start(intervalUs: number): Promise<CpuProfiler> {
    const profiler = new CpuProfiler();
    profiler.session.connect();
    await profiler.session.post('Profiler.enable');
    await profiler.session.post('Profiler.setSamplingInterval', { interval: intervalUs });
    return profiler;
  }

  /** Profiles `work`; adds each function's inclusive milliseconds to `into`. */
  async around<T>(work: () => Promise<T>, into: InclusiveTimes): Promise<T> {
    await this.session.post('Profiler.start');
    let result: T;
    try {
      result = await work();
    } finally {
      const { profile } = (await this.session.post('Profiler.stop')) as { profile: Profile };
      addInclusive(profile, into);
    }
    return result;
  }

  close(): void {
    this.session.disconnect();
  }
}

function addInclusive(profile: Profile, into: InclusiveTimes): void {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const nameOf = (node: ProfileNode) =>
    `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.replace(/^.*\//, '')}`.trim();
  profile.samples.forEach((id, i) => {
    // A sample's time is the gap to the next one.
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const top = byId.get(id);
    if (top) {
      const self = SELF + nameOf(top);
      into.set(self, (into.get(self) ?? 0) + ms);
    }
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at);
      if (!node) break;
      const name = nameOf(node);
      if (seen.has(name)) continue;
      seen.add(name);
      into.set(name, (into.get(name) ?? 0) + ms);
    }
  });
}
