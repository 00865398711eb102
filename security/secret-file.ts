// Key files are written whole or not at all, readable by their owner only (0600, in a 0700 folder), and a
// first write never replaces one that another process made a moment earlier.

import { randomBytes } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { linkIfAbsent } from '../store/durable-file.js';

/** Writes `text` to `path` only if nothing is there; false when something already was. */
export async function writeSecretFile(path: string, text: string): Promise<boolean> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const aside = asidePath(path);
  await writeFile(aside, text, { mode: 0o600, flag: 'wx' });
  return linkIfAbsent(aside, path);
}

/** Replaces `path` with `text` in one step (readers see the old file or the new one). */
export async function replaceSecretFile(path: string, text: string): Promise<void> {
  const aside = asidePath(path);
  await writeFile(aside, text, { mode: 0o600, flag: 'wx' });
  await rename(aside, path);
}

function asidePath(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
}
