import { channel } from 'node:diagnostics_channel';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
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
        await syncer.appendAndSync(handle.fd, path, text);
    } finally {
      await handle.close();
    }
    expect(await readFile(path, 'utf8')).toBe('{"a":1}\n{"b":"é"}\n{"c":3}\n');
  });

  it('takes appends made while one syncs at once, in call order, and shares fdatasyncs among them', async () => {
    const path = join(dir, 'segment.log');
    const handle = await open(path, 'wx');
    const lines = Array.from({ length: 64 }, (_, i) => `{"n":${i}}\n`);
    try {
      const settled: number[] = [];
      const appends: Promise<void>[] = [];
      // Handed over across several ticks, as 32 answers landing together are.
      for (const [i, line] of lines.entries()) {
        appends.push(syncer.appendAndSync(handle.fd, path, line).then(() => void settled.push(i)));
        if (i % 8 === 7) await new Promise((resolve) => setImmediate(resolve));
      }
      await Promise.all(appends);
      expect(settled).toEqual(lines.map((_, i) => i));
    } finally {
      await handle.close();
    }
    expect(await readFile(path, 'utf8')).toBe(lines.join(''));
    expect(syncer.syncs).toBeGreaterThan(0);
    expect(syncer.syncs).toBeLessThanOrEqual(8);
    // One message per tick that appended: what the profile bench counts per main turn.
    expect(syncer.handOvers).toBe(8);
  });

  it('rejects a write that failed, with its error code, and every later append to that file', async () => {
    const path = join(dir, 'segment.log');
    const readOnly = await open(path, 'wx');
    await readOnly.close();
    const handle = await open(path, 'r');
    try {
      await expect(syncer.appendAndSync(handle.fd, path, 'x\n')).rejects.toMatchObject({ code: 'EBADF' });
    } finally {
      await handle.close();
    }
    // The same file again, writable now: what reached it after a failure is unknown, so nothing more goes.
    const again = await open(path, 'a');
    try {
      await expect(syncer.appendAndSync(again.fd, path, 'y\n')).rejects.toMatchObject({ code: 'EBADF' });
    } finally {
      await again.close();
    }
    // Another file is written as before.
    const other = join(dir, 'next.log');
    const writable = await open(other, 'wx');
    try {
      await syncer.appendAndSync(writable.fd, other, 'z\n');
    } finally {
      await writable.close();
    }
    expect(await readFile(path, 'utf8')).toBe('');
    expect(await readFile(other, 'utf8')).toBe('z\n');
  });

  it('looks for ended appends at the HTTP events of the process while its thread runs, and not once closed', async () => {
    const path = join(dir, 'segment.log');
    const handle = await open(path, 'wx');
    try {
      await syncer.appendAndSync(handle.fd, path, 'x\n');
    } finally {
      await handle.close();
    }
    const poll = vi.spyOn(syncer, 'poll');
    // What undici publishes when an engine's answer has ended (the gateway's engine requests go through it).
    channel('undici:request:trailers').publish({});
    expect(poll).toHaveBeenCalledTimes(1);
    await syncer.close();
    channel('undici:request:trailers').publish({});
    expect(poll).toHaveBeenCalledTimes(1);
  });
});
