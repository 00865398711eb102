import { randomUUID } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { link, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';

/**
 * Where turns, samples, exclusions and lineage live. Workflows carry keys, never token arrays, so Temporal
 * payloads stay small. Keys are `/`-separated; each part is encoded so any session id is a safe file name.
 */
export interface SampleStore {
  /** Writes `value` at `key`, replacing what was there, atomically (readers see old or new, never half). */
  put(key: string, value: unknown): Promise<void>;
  /** Writes only if nothing is at `key`; returns false (and changes nothing) if something is. */
  putIfAbsent(key: string, value: unknown): Promise<boolean>;
  get<T = unknown>(key: string): Promise<T | undefined>;
  /** Keys directly or indirectly under `prefix`, sorted. */
  list(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
}

export function storeKey(...parts: (string | number)[]): string {
  return parts.map((part) => encodeURIComponent(String(part))).join('/');
}

export class FileSampleStore implements SampleStore {
  constructor(readonly root: string) {}

  private path(key: string): string {
    if (key.split('/').some((part) => part === '' || part === '.' || part === '..')) {
      throw new Error(`invalid store key: ${key}`);
    }
    return `${join(this.root, ...key.split('/'))}.json`;
  }

  async put(key: string, value: unknown): Promise<void> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}.${randomUUID()}.tmp`;
    await writeFile(temp, JSON.stringify(value));
    await rename(temp, path);
  }

  async putIfAbsent(key: string, value: unknown): Promise<boolean> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}.${randomUUID()}.tmp`;
    await writeFile(temp, JSON.stringify(value));
    try {
      // link() fails if the target exists: an atomic create-if-absent, unlike rename().
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
        if (entry.isDirectory()) await walk(full);
        else if (entry.name.endsWith('.json')) {
          keys.push(relative(this.root, full).slice(0, -'.json'.length).split(sep).join('/'));
        }
      }
    };
    await walk(base);
    return keys.sort();
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }
}
