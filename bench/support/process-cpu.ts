// CPU time of other processes, read from /proc/<pid>/stat (Linux): user plus system time, a figure that holds
// on a loaded machine where wall time does not (what a rollout costs each process, not how long it waited).

import { readdirSync, readFileSync } from 'node:fs';
import { processTree } from './process-memory.js';

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux build this runs on). */
const TICKS_PER_SECOND = 100;

/** User + system seconds of one process (with `reaped`, also of its children it has waited for); 0 once gone. */
export function cpuSeconds(pid: number, { reaped = false } = {}): number {
  return statCpuSeconds(`/proc/${pid}/stat`, reaped);
}

/** User + system seconds of one thread of a process (the main thread's id is the process's); 0 once gone. */
export function threadCpuSeconds(pid: number, tid: number): number {
  return statCpuSeconds(`/proc/${pid}/task/${tid}/stat`, false);
}

/** User and system seconds from a /proc stat file (with `reaped`, the waited-for children's too); null once gone. */
function statTimes(path: string, reaped = false): { user: number; system: number } | null {
  let stat: string;
  try {
    stat = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  // Fields after the command name (which may hold spaces), from field 3 on: utime is 14, stime 15 (the
  // children's cutime 16, cstime 17).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const field = (n: number) => Number(fields[n - 3] ?? 0);
  return {
    user: (field(14) + (reaped ? field(16) : 0)) / TICKS_PER_SECOND,
    system: (field(15) + (reaped ? field(17) : 0)) / TICKS_PER_SECOND,
  };
}

function statCpuSeconds(path: string, reaped: boolean): number {
  const times = statTimes(path, reaped);
  return times ? times.user + times.system : 0;
}

/** CPU seconds of a process tree: its live members, and the children its root has reaped. */
export function treeCpuSeconds(pid: number): number {
  return processTree(pid).reduce(
    (total, member) => total + cpuSeconds(member, { reaped: member === pid }),
    0,
  );
}

/**
 * User and system seconds of a process's threads, summed by thread name (`/proc/<pid>/task/<tid>/comm`; the
 * main thread as "main thread"). The store's threads name themselves; V8's and libuv's keep the process's name.
 */
export function threadCpuByName(pid: number): Map<string, { user: number; system: number }> {
  const byName = new Map<string, { user: number; system: number }>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    const times = statTimes(`/proc/${pid}/task/${tid}/stat`);
    let name: string;
    try {
      name =
        Number(tid) === pid ? 'main thread' : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // gone meanwhile
    }
    if (!times) continue;
    const sum = byName.get(name) ?? { user: 0, system: 0 };
    sum.user += times.user;
    sum.system += times.system;
    byName.set(name, sum);
  }
  return byName;
}

/** What each named thread spent between two readings of `threadCpuByName`, in ms. */
export function threadCpuMsBetween(
  before: Map<string, { user: number; system: number }>,
  after: Map<string, { user: number; system: number }>,
): Map<string, { user: number; system: number }> {
  const spent = new Map<string, { user: number; system: number }>();
  for (const [name, later] of after) {
    const earlier = before.get(name) ?? { user: 0, system: 0 };
    spent.set(name, {
      user: (later.user - earlier.user) * 1000,
      system: (later.system - earlier.system) * 1000,
    });
  }
  return spent;
}

/** Busy seconds of the whole machine so far, all cores (/proc/stat: all but idle and I/O wait), kernel included. */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  // cpu  user nice system idle iowait irq softirq steal (guest time is counted inside user)
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  const ticks = [user, nice, system, irq, softirq, steal].reduce<number>((sum, each) => sum + (each ?? 0), 0);
  return ticks / TICKS_PER_SECOND;
}
