// One file in, one file out of a tar archive: the Engine API copies files into and out of containers only as
// tar (PUT/GET /containers/{id}/archive).

import type { Readable } from 'node:stream';
import { extract, pack } from 'tar-stream';

export interface TarFileOwner {
  uid: number;
  gid: number;
  /** Permission bits, e.g. 0o644. */
  mode: number;
}

/** A tar archive holding `absolutePath` (stored relative to `/`, so missing parent folders are created). */
export function packFile(absolutePath: string, content: Buffer, owner: TarFileOwner): Promise<Buffer> {
  return packFiles([{ path: absolutePath, content }], owner);
}

/** A tar archive holding several files with one owner: one upload instead of one per file. */
export async function packFiles(
  files: readonly { path: string; content: Buffer }[],
  owner: TarFileOwner,
): Promise<Buffer> {
  for (const { path } of files) {
    if (!path.startsWith('/') || path.endsWith('/')) {
      throw new Error(`expected an absolute file path, got ${JSON.stringify(path)}`);
    }
  }
  const archive = pack();
  for (const { path, content } of files) {
    archive.entry(
      {
        name: path.replace(/^\/+/, ''),
        size: content.length,
        mode: owner.mode,
        uid: owner.uid,
        gid: owner.gid,
        mtime: new Date(),
        type: 'file',
      },
      content,
    );
  }
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The content of the first regular file in a tar stream; throws when it is not a file or is too large. */
export async function readSingleFile(archive: NodeJS.ReadableStream, maxBytes: number): Promise<Buffer> {
  const source = archive as Readable;
  const extractor = extract();
  source.pipe(extractor as unknown as NodeJS.WritableStream);
  try {
    return await firstFile(extractor, maxBytes);
  } finally {
    source.destroy(); // frees the Engine API connection when we stop reading early
  }
}

async function firstFile(extractor: ReturnType<typeof extract>, maxBytes: number): Promise<Buffer> {
  for await (const entry of extractor) {
    if (entry.header.type !== 'file') {
      entry.resume();
      throw new Error(`not a regular file (${entry.header.type}): ${entry.header.name}`);
    }
    if (entry.header.size > maxBytes) {
      entry.resume();
      throw new Error(
        `file ${entry.header.name} is ${entry.header.size} bytes, over the ${maxBytes}-byte limit`,
      );
    }
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }
  throw new Error('empty archive');
}
