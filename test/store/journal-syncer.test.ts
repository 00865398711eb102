import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JournalSyncer } from '../../store/journal-syncer.js';

describe('JournalSyncer', () => {
  let dir: string;
  let syncer: JournalSyncer;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'journal-syncer-'));
    syncer = new JournalSyncer();
  });

  afterEach(async () => {
    await syncer.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('appends in order at the file position, each request resolved once its fdatasync returned', async () => {
    const path = join(dir, 'segment.log');
    const handle = await open(path, 'wx');
    try {
      for (const text of ['{"a":1}\n', '{"b":"é"}\n', '{"c":3}\n'])
        await syncer.appendAndSync(handle.fd, text);
    } finally {
      await handle.close();
    }
    expect(await readFile(path, 'utf8')).toBe('{"a":1}\n{"b":"é"}\n{"c":3}\n');
  });

  it('takes one request at a time', async () => {
    const handle = await open(join(dir, 'segment.log'), 'wx');
    try {
      const first = syncer.appendAndSync(handle.fd, 'x\n');
      await expect(syncer.appendAndSync(handle.fd, 'y\n')).rejects.toThrow(/already in flight/);
      await first;
    } finally {
      await handle.close();
    }
  });

  it('rejects a write that failed, with its error code, and keeps working afterwards', async () => {
    const path = join(dir, 'segment.log');
    const readOnly = await open(path, 'wx');
    await readOnly.close();
    const handle = await open(path, 'r');
    try {
      await expect(syncer.appendAndSync(handle.fd, 'x\n')).rejects.toMatchObject({ code: 'EBADF' });
    } finally {
      await handle.close();
    }
    const writable = await open(path, 'a');
    try {
      await syncer.appendAndSync(writable.fd, 'y\n');
    } finally {
      await writable.close();
    }
    expect(await readFile(path, 'utf8')).toBe('y\n');
  });
});
