// Memory of other processes, read from /proc/<pid>/status (Linux): the kernel's own peak (VmHWM) and a
// sampled peak of the resident set (VmRSS), which also covers a process whose VmHWM was reset or unread.

import { readFileSync } from 'node:fs';

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
