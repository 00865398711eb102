// The store's file thread (store/temporary-files.ts): a batch of temporary files written and fsync'd beside
// their final names, all or none.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TemporaryFileWriter } from '../../store/temporary-files.js';

describe('TemporaryFileWriter', () => {
  let dir: string;
  let writer: TemporaryFileWriter;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'temporary-files-'));
    writer = new TemporaryFileWriter();
  });

  afterEach(async () => {
    await writer.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('writes each file beside its name, in order, with its text', async () => {
    const files = [
      { path: join(dir, 'a.json'), text: '{"a":"é"}' },
      { path: join(dir, 'b.json'), text: '' },
    ];
    const [a, b] = await Promise.all([writer.write(files, true), writer.write(files.slice(0, 1), false)]);
    expect(a).toHaveLength(2);
    expect(a?.[0]).toMatch(/^.*\/a\.json\.[0-9a-f-]{36}\.tmp$/);
    expect(a?.[1]).toMatch(/\/b\.json\..*\.tmp$/);
    expect(await readFile(a?.[0] as string, 'utf8')).toBe('{"a":"é"}');
    expect(await readFile(a?.[1] as string, 'utf8')).toBe('');
    expect(await readFile(b?.[0] as string, 'utf8')).toBe('{"a":"é"}');
    expect(await writer.write([], true)).toEqual([]);
  });

  it('writes all or none: a file it cannot write fails the call and takes the batch back', async () => {
    const files = [
      { path: join(dir, 'kept.json'), text: '1' },
      { path: join(dir, 'missing', 'x.json'), text: '2' },
    ];
    await expect(writer.write(files, true)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readdir(dir)).toEqual([]);
    // The thread goes on with the next batch.
    expect(await writer.write(files.slice(0, 1), true)).toHaveLength(1);
  });
});
