// Who wrote a journal segment, and whether that writer still lives. A segment is replayed by someone else only
// once its writer is gone, so the owner's id names the machine, the process (pid and the kernel's start time
// of that pid, so a reused pid is a new owner) and the store instance within the process (tests and tools open
// several stores over one folder in one process).

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** Owners this process has open (a closed store's journal is no longer written, even in a live process). */
const openHere = new Set<string>();

/** Start time of a process in clock ticks since boot (/proc/<pid>/stat, field 22), or null when it is gone. */
function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: fields are counted after its end.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** The owner id of a new journal of this process; `released` must be called when it is closed. */
export function newJournalOwner(): { id: string; release(): void } {
  const id = [
    hostname().replace(/[^A-Za-z0-9-]/g, '-'),
    process.pid,
    processStartTime(process.pid) ?? '0',
    randomUUID().slice(0, 8),
  ].join('~');
  openHere.add(id);
  return { id, release: () => openHere.delete(id) };
}

/**
 * Whether the owner may still be writing. Another machine's owners are taken as alive (the filesystem store is
 * one machine's; a shared folder cannot tell its writers' liveness this way).
 */
export function journalOwnerAlive(id: string): boolean {
  const [host, pid, started] = id.split('~');
  if (host !== hostname().replace(/[^A-Za-z0-9-]/g, '-')) return true;
  const pidNumber = Number(pid);
  if (!Number.isInteger(pidNumber) || pidNumber <= 0) return false;
  if (pidNumber === process.pid) return openHere.has(id);
  return processStartTime(pidNumber) === started;
}
