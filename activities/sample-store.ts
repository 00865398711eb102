import type { Dirent } from 'node:fs';
import { link, readdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { DirectorySyncs, DurableDirectories, writeTemporary } from './durable-file.js';
import { FileOutbox, type PreparedEntry } from './file-outbox.js';
import type { Outbox, OutboxEntry } from './outbox.js';

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
  get<T = unknown>(key: string): Promise<T | undefined>;
  /** Keys directly or indirectly under `prefix`, sorted. */
  list(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
  /** What is still to be told to session workflows (activities/outbox.ts). */
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

export interface FileSampleStoreOptions {
  /** fsync files and directories on every write (default). Off only to measure what it costs. */
  fsync?: boolean;
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

  constructor(
    readonly root: string,
    options: FileSampleStoreOptions = {},
  ) {
    this.sync = options.fsync ?? true;
    const syncs = this.sync ? this.directorySyncs : null;
    this.dirs = new DurableDirectories(root, syncs);
    this.outbox = new FileOutbox(join(root, FILE_OUTBOX_DIR), this.sync, Date.now, this.directorySyncs);
  }

  private syncDirectory(dir: string): Promise<void> {
    return this.sync ? this.directorySyncs.sync(dir) : Promise.resolve();
  }

  /** Writes `value` to a temporary file in its key's directory, made durable meanwhile. */
  private writeTemporary(path: string, value: unknown): Promise<string> {
    return this.dirs.within(dirname(path), () => writeTemporary(path, JSON.stringify(value), this.sync));
  }

  private path(key: string): string {
    const parts = key.split('/');
    if (parts.some((part) => part === '' || part === '.' || part === '..') || parts[0] === FILE_OUTBOX_DIR) {
      throw new Error(`invalid store key: ${key}`);
    }
    return `${join(this.root, ...parts)}.json`;
  }

  async put(key: string, value: unknown): Promise<void> {
    const path = this.path(key);
    const temp = await this.writeTemporary(path, value);
    await rename(temp, path);
    await this.syncDirectory(dirname(path));
  }

  async putIfAbsent(key: string, value: unknown, options: CreateOptions = {}): Promise<boolean> {
    const path = this.path(key);
    const entry = options.outbox;
    const alongside = (options.alongside ?? []).map((write) => ({ ...write, path: this.path(write.key) }));
    // Every file is written (and fsync'd) at once under a temporary name; the entry and the other keys take
    // their names only once the value has its own, durably. Temporary files left over are removed at the end.
    const temps: string[] = [];
    const writing = <T extends string | PreparedEntry>(made: Promise<T>) =>
      made.then((done) => {
        temps.push(typeof done === 'string' ? done : done.temp);
        return done;
      });
    try {
      const written = await Promise.allSettled([
        writing(this.writeTemporary(path, value)),
        entry ? writing(this.outbox.prepare(entry)) : null,
        ...alongside.map((write) => writing(this.writeTemporary(write.path, write.value))),
      ]);
      const failed = written.find((result) => result.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      const [temp, prepared, ...others] = written.map((result) =>
        result.status === 'fulfilled' ? result.value : null,
      ) as [string, PreparedEntry | null, ...string[]];
      if (!(await this.link(temp, path))) return false;
      await this.syncDirectory(dirname(path));
      // The value is durable; only now may anything point at it.
      await Promise.all([
        prepared ? this.outbox.commit(prepared) : null,
        ...alongside.map(async (write, i) => {
          const other = others[i] as string;
          if (write.ifAbsent) await this.link(other, write.path);
          else await rename(other, write.path);
          await this.syncDirectory(dirname(write.path));
        }),
      ]);
      return true;
    } finally {
      await Promise.all(temps.map((temp) => rm(temp, { force: true })));
    }
  }

  /** Gives `temp` the name `path` unless something has it (link() fails then: an atomic create-if-absent). */
  private async link(temp: string, path: string): Promise<boolean> {
    try {
      await link(temp, path);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    } finally {
      await rm(temp, { force: true });
    }
  }

  async get<T = unknown>(key: string): Promise<T | undefined> {
    try {
      return JSON.parse(await readFile(this.path(key), 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
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
          if (dir === this.root && entry.name === FILE_OUTBOX_DIR) continue;
          await walk(full);
        } else if (entry.name.endsWith('.json')) {
          keys.push(relative(this.root, full).slice(0, -'.json'.length).split(sep).join('/'));
        }
      }
    };
    await walk(base);
    return keys.sort();
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key);
    await rm(path, { force: true });
    await this.syncDirectory(dirname(path)).catch(ignoreMissing);
  }
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error;
}
