// File writes that survive a power loss, not only a process crash. A file's data is fsync'd before a name
// points at it (so a crash never leaves a name on half a file), and the directory is fsync'd after the name
// changed (rename, link and unlink update the directory, which is durable only once it is synced). New
// directories are made durable the same way, in their parents. `sync: false` skips every fsync (benchmarks
// compare the two; docs/benchmarks.md).

import { randomUUID } from 'node:crypto';
import { mkdir, open } from 'node:fs/promises';
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

/**
 * Directories this process made durable. A file's directory must itself be durable in its parent before the
 * file counts as written, whoever created it (another writer, another process): the first write into a
 * directory syncs every directory from the root down to its parent, later writes only their own.
 */
export class DurableDirectories {
  private readonly known = new Set<string>();

  constructor(
    private readonly root: string,
    private readonly sync: boolean,
    /** Remembered directories at most; a forgotten one is synced again once. */
    private readonly capacity = 10_000,
  ) {}

  /** Makes `dir` (under the root) and its parents, durable in theirs when syncing. */
  async ensure(dir: string): Promise<void> {
    if (this.known.has(dir)) return;
    await mkdir(dir, { recursive: true });
    if (this.sync) {
      // From the root's parent (the root may be new too) down to `dir`'s parent.
      const chain: string[] = [];
      for (let d = dirname(dir); d.startsWith(this.root) && d !== dirname(d); d = dirname(d)) chain.push(d);
      chain.push(dirname(this.root));
      for (const parent of chain.reverse()) await syncDirectory(parent);
    }
    if (this.known.size >= this.capacity) this.known.clear();
    this.known.add(dir);
  }

  /** After a directory was removed: the next write into it makes it again. */
  forget(dir: string): void {
    this.known.delete(dir);
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
