// Memory of other processes, read from /proc/<pid>/status (Linux): the kernel's own peak (VmHWM) and a
// sampled peak of the resident set (VmRSS), which also covers a process whose VmHWM was reset or unread.

import { readdirSync, readFileSync } from 'node:fs';

export interface MemoryReading {
  /** Resident set now, bytes. */
  rss: number;
  /** Peak resident set since the process started (the kernel's high-water mark), bytes. */
  hwm: number;
}

/** One reading of a live process, or null once it has gone. */
export function readMemory(pid: number): MemoryReading | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
}

export interface MemorySampler {
  /** Peak sampled VmRSS and the last VmHWM read, per named process. */
  peaks(): Record<string, { sampledRss: number; hwm: number }>;
  stop(): void;
}

/** Samples every `everyMs` until stopped; a process that exits keeps its last figures. */
export function sampleMemory(pids: Record<string, number>, everyMs = 250): MemorySampler {
  const peaks: Record<string, { sampledRss: number; hwm: number }> = {};
  for (const name of Object.keys(pids)) peaks[name] = { sampledRss: 0, hwm: 0 };
  const sample = () => {
    for (const [name, pid] of Object.entries(pids)) {
      const reading = readMemory(pid);
      const peak = peaks[name];
      if (reading === null || peak === undefined) continue;
      peak.sampledRss = Math.max(peak.sampledRss, reading.rss);
      peak.hwm = Math.max(peak.hwm, reading.hwm);
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    peaks() {
      sample();
      return structuredClone(peaks);
    },
    stop() {
      clearInterval(timer);
    },
  };
}

export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/** The pids of a process and all its descendants (Linux /proc). */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const visit = (current: number) => {
    out.push(current);
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${current}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children = '';
      try {
        children = readFileSync(`/proc/${current}/task/${task}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of children.split(/\s+/).filter(Boolean)) visit(Number(child));
    }
  };
  visit(pid);
  return out;
}

/**
 * Proportional set size of a process tree, bytes: shared pages counted once across the processes that share
 * them (PostgreSQL's backends share its buffers, which a sum of RSS would count once per backend).
 */
export function treePss(pid: number): number {
  let total = 0;
  for (const member of processTree(pid)) {
    try {
      const rollup = readFileSync(`/proc/${member}/smaps_rollup`, 'utf8');
      total += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}
