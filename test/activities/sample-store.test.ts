import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileSampleStore, storeKey } from '../../activities/sample-store.js';

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
});
