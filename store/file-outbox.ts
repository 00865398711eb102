// The filesystem store's outbox: one file per entry in `<root>/.outbox/entries`, named so that names sort in
// the order entries were written (milliseconds, then a per-process counter), and one lease for the whole
// outbox: the filesystem store lives on one machine, so one relay at a time delivers everything it holds
// (a gateway, another gateway sharing the data directory, or the control worker) and order per session
// follows from the names. The lease is a chain of files `lease/<epoch>`: taking or renewing it creates the
// next epoch with create-if-absent (link), so exactly one contender wins each epoch, and a lease whose
// `expiresAt` has passed may be taken by anyone. Entries are fsync'd (file, then directory) before `enqueue`
// resolves; removals and leases are not (an entry that reappears after a power loss is delivered again, which
// the session workflow ignores; a lease does not outlive a reboot's processes anyway).

import { randomUUID } from 'node:crypto';
import { type FSWatcher, mkdirSync, watch } from 'node:fs';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { DirectorySyncs, DurableDirectories, linkIfAbsent, writeTemporary } from './durable-file.js';
import {
  type Claim,
  type ClaimLimit,
  type Outbox,
  type OutboxEntry,
  type OutboxStats,
  parseOutboxEntry,
} from './outbox.js';
import type { TemporaryFile } from './temporary-files.js';

const leaseSchema = z.object({ holder: z.string(), expiresAt: z.number() });
type Lease = z.infer<typeof leaseSchema>;

const ENTRY_SUFFIX = '.entry';
const EPOCH_DIGITS = 12;
/** An entry file that does not parse this long after it was named is a write a crash cut short. */
const TORN_AFTER_MS = 60_000;

let counter = 0;

/** An entry written to a temporary file (fsync'd) that is not in the outbox until it is committed. */
export interface PreparedEntry {
  temp: string;
  path: string;
}

/** What the store's turn journal (turn-journal.ts) adds to its outbox. */
export interface OutboxJournalHooks {
  /** Resolves once every journaled turn's entry is in the outbox (an entry enqueued now comes after them). */
  settle(): Promise<void>;
  /** Writes the files, entries included, of turns journaled by writers that died. */
  recover(): Promise<void>;
  /** Entries durable in the journal that are not in the outbox folder yet. */
  pending(): OutboxStats;
}

/** `<ms>-<counter>-<random>.entry`: sorts by write time, then by order within this process. */
function entryName(createdAt: number): string {
  counter = (counter + 1) % 36 ** 6;
  const time = String(createdAt).padStart(15, '0');
  return `${time}-${counter.toString(36).padStart(6, '0')}-${randomUUID().slice(0, 8)}${ENTRY_SUFFIX}`;
}

function createdAtOfName(name: string): number {
  return Number(name.slice(0, 15));
}

export class FileOutbox implements Outbox {
  /** Where entries are (the store writes their temporary files too: `entryFile`). */
  readonly entriesDir: string;
  private readonly leaseDir: string;
  private readonly dirs: DurableDirectories;
  /** Entries already read, by file name: a claim reads only the files that are new since the last one. */
  private readonly parsed = new Map<string, OutboxEntry>();

  private readonly syncs: DirectorySyncs | null;

  constructor(
    readonly root: string,
    private readonly sync = true,
    private readonly clock: () => number = Date.now,
    /** Shared with the store the outbox belongs to, so their directory fsyncs are shared too. */
    syncs: DirectorySyncs = new DirectorySyncs(),
    private readonly journal: OutboxJournalHooks | null = null,
  ) {
    this.entriesDir = join(root, 'entries');
    this.leaseDir = join(root, 'lease');
    this.syncs = sync ? syncs : null;
    this.dirs = new DurableDirectories(root, this.syncs);
  }

  async enqueue(entry: OutboxEntry): Promise<void> {
    await this.journal?.settle();
    await this.commit(await this.prepare(entry));
  }

  /**
   * Writes the entry's file under a temporary name the outbox ignores (it may be written while the record it
   * names is, since it is not an entry until `commit`).
   */
  async prepare(entry: OutboxEntry): Promise<PreparedEntry> {
    const file = this.entryFile(entry);
    return { temp: await this.writeTemporary(file), path: file.path };
  }

  /** Writes an entry's file (`entryFile`) under a temporary name, made durable with its folder. */
  writeTemporary(file: TemporaryFile): Promise<string> {
    return this.dirs.within(this.entriesDir, () => writeTemporary(file.path, file.text, this.sync));
  }

  /** The file `prepare` writes for an entry (its name in the outbox and its text), for a writer of its own. */
  entryFile(entry: OutboxEntry): TemporaryFile {
    const { position: _, ...stored } = entry;
    return { path: join(this.entriesDir, entryName(entry.createdAt)), text: JSON.stringify(stored) };
  }

  /** Makes the entries folder (and its parents) durable, as `prepare` does beside its write. */
  async ensureEntries(): Promise<void> {
    await this.dirs.ensure(this.entriesDir);
  }

  /**
   * Puts a prepared entry in the outbox; durable when it resolves. `sync: false`: named only, the caller syncs
   * `entriesDir` later (once for a batch of entries).
   */
  async commit(prepared: PreparedEntry, { sync = true }: { sync?: boolean } = {}): Promise<void> {
    await rename(prepared.temp, prepared.path);
    if (sync) await this.syncs?.sync(this.entriesDir);
  }

  /** Drops a prepared entry that is not to be committed. */
  async discard(prepared: PreparedEntry): Promise<void> {
    await rm(prepared.temp, { force: true });
  }

  async claim(holder: string, leaseMs: number, limit: ClaimLimit): Promise<Claim> {
    // A dead writer's journaled turns become entries here; whoever claims next delivers them.
    await this.journal?.recover();
    const names = await this.entryNames();
    // Standing by with nothing written before the cutoff: the lease is left to the relay that should deliver.
    const oldest = names[0] === undefined ? null : createdAtOfName(names[0]);
    const cutoff = limit.writtenBefore;
    if (cutoff !== undefined && (oldest === null || oldest >= cutoff)) return { entries: [], sessions: [] };
    if (!(await this.lease(holder, leaseMs))) return { entries: [], sessions: [] };
    const entries: OutboxEntry[] = [];
    const sessions = new Set<string>();
    const present = new Set(names);
    for (const name of this.parsed.keys()) if (!present.has(name)) this.parsed.delete(name);
    for (const name of names) {
      if (entries.length >= limit.entries) break;
      const entry = this.parsed.get(name) ?? (await this.readEntry(name));
      if (!entry) continue;
      if (!sessions.has(entry.sessionId)) {
        // Past the session limit, only the sessions already taken; the others' turn comes next time.
        if (sessions.size >= limit.sessions) continue;
        sessions.add(entry.sessionId);
      }
      entries.push(entry);
    }
    return { entries, sessions: 'all' };
  }

  async remove(entries: readonly OutboxEntry[]): Promise<void> {
    await Promise.all(
      entries.map((entry) =>
        entry.position ? rm(join(this.entriesDir, entry.position), { force: true }) : undefined,
      ),
    );
  }

  /** Only the whole outbox's lease is given up (a relay stopping); one session's release means nothing here. */
  async release(holder: string, sessionIds?: readonly string[]): Promise<void> {
    if (sessionIds !== undefined) return;
    const current = await this.currentLease();
    if (current?.lease.holder !== holder) return;
    await this.writeLease(current.epoch + 1, { holder: '', expiresAt: 0 });
  }

  async stats(): Promise<OutboxStats> {
    const names = await this.entryNames();
    const first = names[0];
    const inFolder = first === undefined ? null : createdAtOfName(first);
    const journaled = this.journal?.pending() ?? { depth: 0, oldestCreatedAt: null };
    const oldest = [inFolder, journaled.oldestCreatedAt].filter((at): at is number => at !== null);
    return {
      depth: names.length + journaled.depth,
      oldestCreatedAt: oldest.length === 0 ? null : Math.min(...oldest),
    };
  }

  /** inotify on the entries folder: a relay hears of an entry written by another process at once. */
  watch(onChange: () => void): () => void {
    let watcher: FSWatcher | null = null;
    try {
      mkdirSync(this.entriesDir, { recursive: true });
      watcher = watch(this.entriesDir, { persistent: false }, (_event, name) => {
        if (name?.endsWith(ENTRY_SUFFIX)) onChange();
      });
      watcher.on('error', () => watcher?.close());
    } catch {
      // no watching here (a filesystem without it): the relay's poll finds new entries
    }
    return () => watcher?.close();
  }

  /** Takes or renews the outbox's lease for `holder`; false while another holder's lease runs. */
  private async lease(holder: string, leaseMs: number): Promise<boolean> {
    const now = this.clock();
    const current = await this.currentLease();
    if (current) {
      const { lease } = current;
      const mine = lease.holder === holder;
      if (!mine && lease.expiresAt > now) return false;
      // Renewed once half of it has run, not on every call.
      if (mine && lease.expiresAt - now > leaseMs / 2) return true;
    }
    const next = (current?.epoch ?? 0) + 1;
    const won = await this.writeLease(next, { holder, expiresAt: now + leaseMs });
    if (won && current) await this.dropEpochsBefore(current.epoch);
    return won;
  }

  private async currentLease(): Promise<{ epoch: number; lease: Lease } | null> {
    let names: string[];
    try {
      names = await readdir(this.leaseDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    const epochs = names
      .filter((name) => /^\d+$/.test(name))
      .map(Number)
      .sort((a, b) => b - a);
    for (const epoch of epochs) {
      try {
        const parsed = leaseSchema.safeParse(JSON.parse(await readFile(this.leasePath(epoch), 'utf8')));
        if (parsed.success) return { epoch, lease: parsed.data };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    return null;
  }

  /** Creates lease epoch `epoch` if nobody has; true when this call did. */
  private async writeLease(epoch: number, lease: Lease): Promise<boolean> {
    await this.dirs.ensure(this.leaseDir);
    const path = this.leasePath(epoch);
    const temp = `${path}.${randomUUID()}.tmp`;
    await writeFile(temp, JSON.stringify(lease));
    return linkIfAbsent(temp, path);
  }

  /** Old epochs are history; the newest ones stay, so a contender that read an older one still loses. */
  private async dropEpochsBefore(epoch: number): Promise<void> {
    const names = await readdir(this.leaseDir).catch(() => [] as string[]);
    await Promise.all(
      names
        .filter((name) => /^\d+$/.test(name) && Number(name) < epoch)
        .map((name) => rm(join(this.leaseDir, name), { force: true })),
    );
  }

  private leasePath(epoch: number): string {
    return join(this.leaseDir, String(epoch).padStart(EPOCH_DIGITS, '0'));
  }

  private async entryNames(): Promise<string[]> {
    try {
      return (await readdir(this.entriesDir)).filter((name) => name.endsWith(ENTRY_SUFFIX)).sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }

  private async readEntry(name: string): Promise<OutboxEntry | null> {
    let text: string;
    try {
      text = await readFile(join(this.entriesDir, name), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null; // delivered meanwhile
      throw error;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      raw = undefined;
    }
    const entry = parseOutboxEntry(raw, name);
    if (entry) {
      this.parsed.set(name, entry);
      return entry;
    }
    // Entries are renamed into place whole, so only a damaged disk makes one unreadable: set it aside.
    if (this.clock() - createdAtOfName(name) > TORN_AFTER_MS)
      await rename(join(this.entriesDir, name), join(this.entriesDir, `${name}.unreadable`)).catch(() => {});
    return null;
  }
}
