// File writes that survive a power loss, not only a process crash. A file's data is fsync'd before a name
// points at it (so a crash never leaves a name on half a file), and the directory is fsync'd after the name
// changed (rename, link and unlink update the directory, which is durable only once it is synced). New
// directories are made durable the same way, in their parents. `sync: false` skips every fsync (benchmarks
// compare the two; docs/benchmarks.md).
//
// Directory fsyncs are shared (group commit): writers that changed the same directory at about the same time
// wait for one fsync of it that started after all their changes, instead of one each in a row. Thirty-two
// turns written together into the outbox folder then cost about two fsyncs of it, not thirty-two.

import { randomUUID } from 'node:crypto';
import { link, mkdir, open, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Flushes a directory's entries (names added, renamed or removed) to the disk. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

interface DirectorySync {
  running: Promise<void>;
  /** The sync that starts once `running` is over, shared by every writer that arrived while it ran. */
  queued: Promise<void> | null;
}

/**
 * fsyncs of directories, shared by the writers that need them at the same time. A writer that changed a
 * directory needs an fsync that starts after its change: one already running may have started before it, so
 * the writer waits for the next one, which every writer arriving meanwhile shares.
 */
export class DirectorySyncs {
  private readonly syncs = new Map<string, DirectorySync>();
  /** fsyncs of directories issued so far (benchmarks report them per write). */
  issued = 0;

  /** Resolves once an fsync of `dir` that started after this call has completed. */
  sync(dir: string): Promise<void> {
    const current = this.syncs.get(dir);
    if (current === undefined) return this.begin(dir);
    current.queued ??= current.running.catch(() => undefined).then(() => this.begin(dir));
    return current.queued;
  }

  private begin(dir: string): Promise<void> {
    this.issued++;
    const state: DirectorySync = { running: Promise.resolve(), queued: null };
    state.running = syncDirectory(dir).finally(() => {
      if (this.syncs.get(dir) === state && state.queued === null) this.syncs.delete(dir);
    });
    this.syncs.set(dir, state);
    return state.running;
  }
}

/**
 * Directories this process made durable. A file's directory must itself be durable in its parent before the
 * file counts as written, whoever created it (another writer, another process): the first write into a
 * directory syncs the parent of every directory on its path this process has not made durable yet (from the
 * root's parent down), later writes nothing.
 */
export class DurableDirectories {
  private readonly known = new Set<string>();

  constructor(
    private readonly root: string,
    private readonly syncs: DirectorySyncs | null,
    /** Remembered directories at most; a forgotten one is synced again once. */
    private readonly capacity = 10_000,
  ) {}

  /** Makes `dir` (the root or under it) and its parents, durable in theirs when syncing. */
  async ensure(dir: string): Promise<void> {
    await this.within(dir, async () => undefined);
  }

  /**
   * Makes `dir` as `ensure` does and runs `write` (which writes into it) once it exists, while its parents are
   * synced: resolves with `write`'s result once both are done.
   */
  async within<T>(dir: string, write: () => Promise<T>): Promise<T> {
    if (this.known.has(dir)) return write();
    await mkdir(dir, { recursive: true });
    // `dir` and its ancestors up to the first known one (the root at most): each is durable once its parent
    // is synced. The syncs are independent, so they run together.
    const unknown: string[] = [];
    for (let d = dir; !this.known.has(d); d = dirname(d)) {
      unknown.push(d);
      if (d === this.root || d === dirname(d) || !d.startsWith(this.root)) break;
    }
    const syncs = this.syncs;
    const durable = syncs ? Promise.all(unknown.map((d) => syncs.sync(dirname(d)))) : null;
    const [result] = await Promise.all([write(), durable]);
    if (this.known.size + unknown.length > this.capacity) this.known.clear();
    for (const d of unknown) this.known.add(d);
    return result;
  }

  /** After a directory was removed: the next write into it makes it again. */
  forget(dir: string): void {
    this.known.delete(dir);
  }
}

/**
 * Gives the file `temp` the name `path` unless something already has it, then removes `temp` (whatever
 * happened); true when this call created `path`. link() fails when the target exists: an atomic
 * create-if-absent, which rename() is not. Syncing the directory afterwards is the caller's.
 */
export async function linkIfAbsent(temp: string, path: string): Promise<boolean> {
  try {
    await link(temp, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await removeTemporary(temp);
  }
}

/** Removes a temporary file, gone already or not: one unlink (rm would look at it first). */
export async function removeTemporary(temp: string): Promise<void> {
  try {
    await unlink(temp);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Writes `data` to a new temporary file beside `path`, fsync'd when `sync`; returns the temporary path. */
export async function writeTemporary(path: string, data: string, sync: boolean): Promise<string> {
  const temp = `${path}.${randomUUID()}.tmp`;
  const handle = await open(temp, 'wx');
  try {
    await handle.writeFile(data);
    if (sync) await handle.sync();
  } finally {
    await handle.close();
  }
  return temp;
}
