import { type Dirent, existsSync, readFileSync } from 'node:fs';
import { readdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import {
  DirectorySyncs,
  DurableDirectories,
  linkIfAbsent,
  removeTemporary,
  writeTemporary,
} from './durable-file.js';
import { FileOutbox } from './file-outbox.js';
import type { Outbox, OutboxEntry } from './outbox.js';
import { type TemporaryFile, TemporaryFileWriter } from './temporary-files.js';
import {
  type JournalLine,
  type JournalWrite,
  journaledKeys,
  type RecordedLine,
  recoverJournals,
  TurnJournal,
} from './turn-journal.js';

/** A line's files other than its record, under temporary names until the record is durable. */
interface UnnamedFiles {
  /** Names them, syncing each one's directory through `sync`; no temporary is left, whatever happens. */
  name(sync: (dir: string) => Promise<void>): Promise<void>;
  /** Removes their temporary files. */
  discard(): Promise<void>;
}

/**
 * Where turns, samples, exclusions and lineage live. Workflows carry keys, never token arrays, so Temporal
 * payloads stay small. Keys are `/`-separated; each part is encoded so any session id is a safe file name.
 * Every write is durable (it survives a power loss) when its promise resolves.
 */
export interface SampleStore {
  /** Writes `value` at `key`, replacing what was there, atomically (readers see old or new, never half). */
  put(key: string, value: unknown): Promise<void>;
  /**
   * Writes only if nothing is at `key`; returns false (and changes nothing) if something is. With `outbox`,
   * the entry is added together with the value when the value is created, and so are the `alongside` writes:
   * once this resolves true, all of them are durable; a failure may leave the value without some of them (a
   * retry that finds the value writes them again), never one of them without the value.
   */
  putIfAbsent(key: string, value: unknown, options?: CreateOptions): Promise<boolean>;
  get<T = unknown>(key: string, options?: GetOptions): Promise<T | undefined>;
  /** Keys directly or indirectly under `prefix`, sorted. */
  list(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
  /** What is still to be told to session workflows (store/outbox.ts). */
  readonly outbox: Outbox;
  /** Releases connections; the store is not used afterwards. */
  close?(): Promise<void>;
}

/** Another key written when a value is created, after it: `ifAbsent` keeps what is already there. */
export interface AlongsideWrite {
  key: string;
  value: unknown;
  ifAbsent: boolean;
}

/** How a value is read. */
export interface GetOptions {
  /**
   * The value is a small one written recently (an index entry): the filesystem store reads it without the I/O
   * threads. Four trips through them (open, stat, read, close) cost the event loop about 0.5 ms per read at
   * concurrency 8, against microseconds for a file in the page cache read at once; a file that is not cached
   * holds the loop for one small read.
   */
  small?: boolean;
}

/** What `putIfAbsent` writes with the value when it creates it. */
export interface CreateOptions {
  outbox?: OutboxEntry;
  alongside?: readonly AlongsideWrite[];
}

export function storeKey(...parts: (string | number)[]): string {
  return parts.map((part) => encodeURIComponent(String(part))).join('/');
}

/** The filesystem store's outbox folder, under its root (no key's first part may name it). */
export const FILE_OUTBOX_DIR = '.outbox';
/** The filesystem store's journal of turns (turn-journal.ts), under its root. */
export const FILE_JOURNAL_DIR = '.journal';

/** How often a relay's claim looks for journals whose writers died (their turns' files are written then). */
const RECOVER_EVERY_MS = 5_000;

export interface FileSampleStoreOptions {
  /** fsync files and directories on every write (default). Off only to measure what it costs. */
  fsync?: boolean;
  /**
   * Make a turn (a create-if-absent with an outbox entry) durable with one append to a journal and write its
   * files afterwards (turn-journal.ts): the serving path waits for one shared fdatasync instead of a dozen file
   * operations. Default off here; `store.journal` (on by default) sets it for the processes `dev` starts.
   */
  journal?: boolean;
}

/**
 * A directory of JSON files, one per key. A write goes to a temporary file that is fsync'd, then takes its
 * name (rename, or link for create-if-absent), then the directory is fsync'd: after a crash or a power loss a
 * key holds its old value or its new one, whole. A turn's outbox entry takes its name only once its record is
 * durable (its file is written beside the record's, under a name the outbox ignores), so a crash between the
 * two leaves a record nobody was told about (its client saw no answer and retries, which adds the entry),
 * never an entry whose record is missing. Writers share directory fsyncs (durable-file.ts).
 */
export class FileSampleStore implements SampleStore {
  readonly outbox: FileOutbox;
  /** Directory fsyncs, shared by this store's writers and its outbox's. */
  readonly directorySyncs = new DirectorySyncs();
  private readonly sync: boolean;
  private readonly dirs: DurableDirectories;
  /** Writes the temporary files of created values (temporary-files.ts). */
  private readonly temporaries = new TemporaryFileWriter();
  private readonly journaled: boolean;
  /** Directories the journal's materializing named files in, not synced yet (syncDeferredDirectories). */
  private readonly deferredDirectories = new Set<string>();
  private journal: TurnJournal | null = null;
  private lastRecovery = Number.NEGATIVE_INFINITY;
  private recovering: Promise<void> | null = null;

  constructor(
    readonly root: string,
    options: FileSampleStoreOptions = {},
  ) {
    this.sync = options.fsync ?? true;
    this.journaled = options.journal ?? false;
    const syncs = this.sync ? this.directorySyncs : null;
    this.dirs = new DurableDirectories(root, syncs);
    this.outbox = new FileOutbox(join(root, FILE_OUTBOX_DIR), this.sync, Date.now, this.directorySyncs, {
      // An entry enqueued directly (a session's end, a duplicate's entry) must not overtake the session's
      // journaled turns.
      settle: async () => this.journal?.drain(),
      // A segment that cannot be replayed now is tried again later; the outbox's other entries still go.
      recover: () => this.recoverJournals(false).catch(() => undefined),
      pending: () => this.journal?.pendingEntries() ?? { depth: 0, oldestCreatedAt: null },
    });
  }

  /**
   * Writes the files of journaled turns whose writer died (another process's journal, or this folder's before a
   * restart); the relays' claims run it every few seconds, `force` runs it now.
   */
  async recoverJournals(force = true): Promise<void> {
    if (!force && performance.now() - this.lastRecovery < RECOVER_EVERY_MS) return;
    if (this.recovering) return this.recovering;
    this.lastRecovery = performance.now();
    this.recovering = recoverJournals(
      join(this.root, FILE_JOURNAL_DIR),
      (line) => this.materialize(line),
      this.directorySyncs,
    )
      .then(() => undefined)
      .finally(() => {
        this.recovering = null;
      });
    return this.recovering;
  }

  /**
   * Resolves once the turns journaled so far, by this process or any other on this folder (a gateway), are in
   * their files, or after `timeoutMs` (a writer that keeps appending is not waited for beyond its lines of now).
   * A reader in another process that expects a turn the gateway just answered waits for this first.
   */
  async journaledWritten(timeoutMs = 10_000): Promise<void> {
    await this.journal?.drain();
    const deadline = performance.now() + timeoutMs;
    const dir = join(this.root, FILE_JOURNAL_DIR);
    let keys = await journaledKeys(dir);
    while (keys.length > 0 && performance.now() < deadline) {
      keys = keys.filter((key) => !existsSync(this.path(key)));
      if (keys.length === 0) return;
      await this.recoverJournals(false).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Materializes every journaled turn and deletes the journal (nothing is lost without it: it is durable). */
  async close(): Promise<void> {
    const journal = this.journal;
    this.journal = null;
    await journal?.close();
    await this.temporaries.close();
  }

  /** This store's journal, opened on its first turn. */
  private openJournal(): TurnJournal {
    this.journal ??= new TurnJournal({
      dir: join(this.root, FILE_JOURNAL_DIR),
      materialize: {
        record: (line) => this.recordLine(line),
        flush: () => this.syncDeferredDirectories(),
      },
      ensureDir: (dir) => this.dirs.ensure(dir),
      syncs: this.directorySyncs,
    });
    return this.journal;
  }

  /** The journal of this store, once its first turn opened it (tests and benchmarks drain it and count appends). */
  get openedJournal(): TurnJournal | null {
    return this.journal;
  }

  /** Makes durable the directories the journal's materializing named files in since the last call (one fsync each). */
  private async syncDeferredDirectories(): Promise<void> {
    const dirs = [...this.deferredDirectories];
    this.deferredDirectories.clear();
    await Promise.all(dirs.map((dir) => this.syncDirectory(dir)));
  }

  private syncDirectory(dir: string): Promise<void> {
    return this.sync ? this.directorySyncs.sync(dir) : Promise.resolve();
  }

  /** Writes `text` to a temporary file in its key's directory, made durable meanwhile. */
  private writeTemporary(path: string, text: string): Promise<string> {
    return this.dirs.within(dirname(path), () => writeTemporary(path, text, this.sync));
  }

  private path(key: string): string {
    const parts = key.split('/');
    if (
      parts.some((part) => part === '' || part === '.' || part === '..') ||
      parts[0] === FILE_OUTBOX_DIR ||
      parts[0] === FILE_JOURNAL_DIR
    ) {
      throw new Error(`invalid store key: ${key}`);
    }
    return `${join(this.root, ...parts)}.json`;
  }

  async put(key: string, value: unknown): Promise<void> {
    const path = this.path(key);
    // A journaled value of this key is written first, so it cannot land after (and over) this one.
    if (this.journal?.has(key)) await this.journal.drain();
    const temp = await this.writeTemporary(path, JSON.stringify(value));
    await rename(temp, path);
    await this.syncDirectory(dirname(path));
  }

  async putIfAbsent(key: string, value: unknown, options: CreateOptions = {}): Promise<boolean> {
    const path = this.path(key);
    // Checked now: a key the store refuses must fail the call, not the files' write after it.
    for (const write of options.alongside ?? []) this.path(write.key);
    const alongside: JournalWrite[] = (options.alongside ?? []).map((write) => ({
      key: write.key,
      text: JSON.stringify(write.value),
      ifAbsent: write.ifAbsent,
    }));
    const line: JournalLine = {
      key,
      text: JSON.stringify(value),
      alongside,
      ...(options.outbox && { outbox: options.outbox }),
    };
    if (this.journaled && options.outbox) return this.journalCreate(line, path);
    if (this.journal?.has(key)) return false;
    return this.writeCreated(line, 'create');
  }

  /** A turn made durable by the journal; its files are written afterwards. */
  private async journalCreate(line: JournalLine, path: string): Promise<boolean> {
    const journal = this.openJournal();
    // A synchronous look (one stat of a cached directory entry): on the I/O threads it would queue behind the
    // files of the turns before it.
    if (journal.has(line.key) || existsSync(path)) return false;
    await journal.append(line);
    return true;
  }

  /** Writes a replayed journaled line's files (the record may be there already). */
  private async materialize(line: JournalLine): Promise<void> {
    await this.writeCreated(line, 'materialize');
  }

  /**
   * Writes the files under temporary names, all or none. In the background (a journaled line), on the store's
   * file thread (temporary-files.ts), beside no event loop; on a turn's own path, side by side on the I/O
   * threads, where one thread would write 32 concurrent turns' files one after another.
   */
  private async writeTemporaries(files: readonly TemporaryFile[], background: boolean): Promise<string[]> {
    const isEntry = (file: TemporaryFile) => dirname(file.path) === this.outbox.entriesDir;
    if (background) {
      const dirs = new Set(files.filter((file) => !isEntry(file)).map((file) => dirname(file.path)));
      await Promise.all([
        ...[...dirs].map((dir) => this.dirs.ensure(dir)),
        files.some(isEntry) ? this.outbox.ensureEntries() : null,
      ]);
      return this.temporaries.write(files, this.sync);
    }
    const written = await Promise.allSettled(
      files.map((file) =>
        isEntry(file) ? this.outbox.writeTemporary(file) : this.writeTemporary(file.path, file.text),
      ),
    );
    const failed = written.find((result) => result.status === 'rejected');
    if (failed === undefined)
      return written.map((result) => (result as PromiseFulfilledResult<string>).value);
    await Promise.all(
      written.map((result) => (result.status === 'fulfilled' ? removeTemporary(result.value) : null)),
    );
    throw (failed as PromiseRejectedResult).reason;
  }

  /**
   * Creates `line.key` if absent, then its entry and alongside writes. `materialize`: a journaled line replayed
   * after a crash (the first attempt may have stopped between the writes, so they are made even when the key
   * was there).
   */
  private async writeCreated(line: JournalLine, mode: 'create' | 'materialize'): Promise<boolean> {
    const { created, rest } = await this.nameRecord(line, mode === 'materialize');
    if (!created && mode === 'create') {
      await rest.discard();
      return false;
    }
    try {
      await this.syncDirectory(dirname(this.path(line.key)));
    } catch (error) {
      await rest.discard();
      throw error;
    }
    // The value is durable; only now may anything point at it.
    await rest.name((dir) => this.syncDirectory(dir));
    return created;
  }

  /**
   * A live journaled line's record, named without syncing its directory: the journal syncs the directories
   * of a batch of lines once (flush), then names the rest (their directories left to the next flush).
   */
  private async recordLine(line: JournalLine): Promise<RecordedLine> {
    const { rest } = await this.nameRecord(line, true);
    this.deferredDirectories.add(dirname(this.path(line.key)));
    return {
      point: () =>
        rest.name(async (dir) => {
          this.deferredDirectories.add(dir);
        }),
      discard: () => rest.discard(),
    };
  }

  /**
   * Writes every file of `line` at once under a temporary name (fsync'd), then gives the record its name if it
   * has none (create-if-absent); the others keep their temporary names until `rest.name`, once the record is
   * durable. `background`: a journaled line's, written on the store's file thread.
   */
  private async nameRecord(
    line: JournalLine,
    background: boolean,
  ): Promise<{ created: boolean; rest: UnnamedFiles }> {
    const path = this.path(line.key);
    const entry = line.outbox;
    const alongside = line.alongside.map((write) => ({ ...write, path: this.path(write.key) }));
    const entryFile = entry ? this.outbox.entryFile(entry) : null;
    const files: TemporaryFile[] = [
      { path, text: line.text },
      ...alongside.map(({ path, text }) => ({ path, text })),
    ];
    if (entryFile) files.push(entryFile);
    const [temp, ...others] = (await this.writeTemporaries(files, background)) as [string, ...string[]];
    const prepared = entryFile ? { temp: others.pop() as string, path: entryFile.path } : null;
    const left = new Set([...others, ...(prepared ? [prepared.temp] : [])]);
    const discard = () => Promise.all([...left].map((temp) => removeTemporary(temp))).then(() => undefined);
    let created: boolean;
    try {
      created = await linkIfAbsent(temp, path); // removes `temp`, whatever happens
    } catch (error) {
      await discard();
      throw error;
    }
    const name = async (sync: (dir: string) => Promise<void>) => {
      try {
        await Promise.all([
          prepared
            ? this.outbox.commit(prepared, { sync: false }).then(async () => {
                left.delete(prepared.temp);
                await sync(this.outbox.entriesDir);
              })
            : null,
          ...alongside.map(async (write, i) => {
            const other = others[i] as string;
            if (write.ifAbsent) {
              left.delete(other);
              await linkIfAbsent(other, write.path);
            } else {
              await rename(other, write.path);
              left.delete(other);
            }
            await sync(dirname(write.path));
          }),
        ]);
      } finally {
        await discard();
      }
    };
    return { created, rest: { name, discard } };
  }

  async get<T = unknown>(key: string, options: GetOptions = {}): Promise<T | undefined> {
    const journaled = this.journal?.pendingValue(key);
    // A journaled create-if-absent yields to a value already in the files (the record's own key cannot have
    // one: it was checked before the append).
    if (journaled && !journaled.ifAbsent) return JSON.parse(journaled.text) as T;
    const text = await readText(this.path(key), options.small === true);
    if (text !== undefined) return JSON.parse(text) as T;
    const pending = journaled ?? this.journal?.pendingValue(key);
    return pending ? (JSON.parse(pending.text) as T) : undefined;
  }

  async list(prefix: string): Promise<string[]> {
    const base = join(this.root, ...prefix.split('/').filter(Boolean));
    const keys: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries: Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      for (const entry of entries) {
        const full = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (dir === this.root && (entry.name === FILE_OUTBOX_DIR || entry.name === FILE_JOURNAL_DIR))
            continue;
          await walk(full);
        } else if (entry.name.endsWith('.json')) {
          keys.push(relative(this.root, full).slice(0, -'.json'.length).split(sep).join('/'));
        }
      }
    };
    await walk(base);
    if (this.journal) {
      const under = prefix.split('/').filter(Boolean).join('/');
      const found = new Set(keys);
      for (const key of this.journal.keys())
        if ((under === '' || key.startsWith(`${under}/`)) && !found.has(key)) keys.push(key);
    }
    return keys.sort();
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key);
    if (this.journal?.has(key)) await this.journal.drain();
    await rm(path, { force: true });
    await this.syncDirectory(dirname(path)).catch(ignoreMissing);
  }
}

/** A file's text; undefined when there is none. `small`: read at once, without the I/O threads (GetOptions). */
async function readText(path: string, small: boolean): Promise<string | undefined> {
  try {
    // existsSync makes no error for a missing file: making one costs more than reading a small file.
    if (small) return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return undefined;
  }
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error;
}
