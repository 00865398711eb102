import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DirectorySyncs } from '../../store/durable-file.js';
import { FILE_OUTBOX_DIR, FileSampleStore, storeKey } from '../../store/sample-store.js';
import { testTurnEntry } from '../support/outbox-entries.js';

describe('FileSampleStore', () => {
  let root: string;
  let store: FileSampleStore;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'store-'));
    store = new FileSampleStore(root);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('round-trips values under encoded keys, any session id included', async () => {
    const key = storeKey('turns', 'user/../weird id:1', 3);
    await store.put(key, { tokens: [1, 2, 3] });
    expect(await store.get(key)).toEqual({ tokens: [1, 2, 3] });
    expect(await store.get(storeKey('turns', 'absent', 1))).toBeUndefined();
    expect(await store.list('turns')).toEqual([key]);
  });

  it('putIfAbsent writes once and refuses a second writer', async () => {
    const key = storeKey('samples', 's:1');
    expect(await store.putIfAbsent(key, { v: 1 })).toBe(true);
    expect(await store.putIfAbsent(key, { v: 2 })).toBe(false);
    expect(await store.get(key)).toEqual({ v: 1 });
  });

  it('leaves no temporary files behind and lists sorted keys under a prefix', async () => {
    await Promise.all([3, 1, 2].map((turn) => store.put(storeKey('turns', 'a', turn), { turn })));
    await store.put(storeKey('samples', 'x'), {});
    expect(await store.list('turns/a')).toEqual(['turns/a/1', 'turns/a/2', 'turns/a/3']);
    const files = await readdir(join(root, 'turns', 'a'));
    expect(files.every((f) => f.endsWith('.json'))).toBe(true);
    await store.delete('turns/a/2');
    expect(await store.list('turns')).toEqual(['turns/a/1', 'turns/a/3']);
  });

  it('rejects keys that would escape the store', async () => {
    await expect(store.put('turns/../../etc', {})).rejects.toThrow(/invalid store key/);
  });

  it('a turn already there leaves neither an entry nor its temporary file in the outbox', async () => {
    expect(await store.putIfAbsent('turns/s/1', { turn: 1 }, { outbox: testTurnEntry('s', 1) })).toBe(true);
    expect(await store.putIfAbsent('turns/s/1', { turn: 1 }, { outbox: testTurnEntry('s', 1) })).toBe(false);
    const files = await readdir(join(root, FILE_OUTBOX_DIR, 'entries'));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/\.entry$/);
    expect(await readdir(join(root, 'turns', 's'))).toEqual(['1.json']);
  });

  it('a turn whose entry cannot be written is not written either, and leaves no temporary file', async () => {
    await mkdir(join(root, FILE_OUTBOX_DIR), { recursive: true });
    await writeFile(join(root, FILE_OUTBOX_DIR, 'entries'), 'not a folder');
    await expect(
      store.putIfAbsent('turns/s/1', { turn: 1 }, { outbox: testTurnEntry('s', 1) }),
    ).rejects.toThrow();
    expect(await store.list('turns')).toEqual([]);
    expect(await readdir(join(root, 'turns', 's'))).toEqual([]);
  });

  it('concurrent turns of new sessions share directory fsyncs instead of one each', async () => {
    // Each write makes a session folder (its parent synced), a record (its folder synced) and an outbox
    // entry (the outbox folder synced): 3 directory fsyncs each when every writer syncs alone.
    const writers = 32;
    await store.putIfAbsent('turns/warm/1', {}, { outbox: testTurnEntry('warm', 1) });
    const before = store.directorySyncs.issued;
    await Promise.all(
      Array.from({ length: writers }, (_, i) =>
        store.putIfAbsent(`turns/s${i}/1`, { i }, { outbox: testTurnEntry(`s${i}`, 1) }),
      ),
    );
    const issued = store.directorySyncs.issued - before;
    // The session folders' own syncs are one each; the shared parent and the outbox folder are shared.
    expect(issued).toBeLessThan(3 * writers);
    expect(issued).toBeGreaterThanOrEqual(writers);
    expect((await store.outbox.stats()).depth).toBe(writers + 1);
  });
});

describe('DirectorySyncs', () => {
  it('callers that arrive while an fsync runs share the next one, which starts after them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'syncs-'));
    try {
      const syncs = new DirectorySyncs();
      const first = syncs.sync(dir);
      // These arrive while the first runs (it may have started before their changes): one more serves all.
      const later = Array.from({ length: 10 }, () => syncs.sync(dir));
      expect(syncs.issued).toBe(1);
      await first;
      await Promise.all(later);
      expect(syncs.issued).toBe(2);
      // Nothing running now: the next caller starts its own.
      await syncs.sync(dir);
      expect(syncs.issued).toBe(3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a failed fsync fails its callers and not the next ones', async () => {
    const syncs = new DirectorySyncs();
    const missing = join(tmpdir(), `no-such-dir-${process.pid}-${Date.now()}`);
    await expect(syncs.sync(missing)).rejects.toThrow(/ENOENT/);
    await expect(syncs.sync(tmpdir())).resolves.toBeUndefined();
  });
});
