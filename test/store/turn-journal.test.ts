import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sessionDoneEntry } from '../../store/outbox.js';
import { FILE_JOURNAL_DIR, FILE_OUTBOX_DIR, FileSampleStore, storeKey } from '../../store/sample-store.js';
import { journaledKeys } from '../../store/turn-journal.js';
import { TEST_OUTBOX_WORKFLOW, testTurnEntry } from '../support/outbox-entries.js';

const run = promisify(execFile);

function turn(store: FileSampleStore, session: string, n: number) {
  return store.putIfAbsent(
    storeKey('turns', session, n),
    { n },
    {
      outbox: testTurnEntry(session, n),
      alongside: [
        { key: storeKey('continuations', session, n), value: { n }, ifAbsent: true },
        { key: storeKey('replies', session, 'last'), value: { n }, ifAbsent: false },
      ],
    },
  );
}

async function files(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => [] as string[]);
}

describe('FileSampleStore with its turn journal', () => {
  let root: string;
  let store: FileSampleStore;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'journal-'));
    store = new FileSampleStore(root, { journal: true });
  });

  afterEach(async () => {
    await store.close();
    await rm(root, { recursive: true, force: true });
  });

  it('reads a turn at once, refuses it twice, and writes its files, entry and index afterwards', async () => {
    expect(await turn(store, 'a', 1)).toBe(true);
    expect(await store.get(storeKey('turns', 'a', 1))).toEqual({ n: 1 });
    expect(await store.get(storeKey('replies', 'a', 'last'))).toEqual({ n: 1 });
    expect(await store.list('turns')).toEqual(['turns/a/1']);
    expect(await turn(store, 'a', 1)).toBe(false);
    expect((await store.outbox.stats()).depth).toBe(1);

    await store.openedJournal?.drain();
    const fresh = new FileSampleStore(root);
    expect(await fresh.get(storeKey('turns', 'a', 1))).toEqual({ n: 1 });
    expect(await fresh.get(storeKey('continuations', 'a', 1))).toEqual({ n: 1 });
    expect(await fresh.get(storeKey('replies', 'a', 'last'))).toEqual({ n: 1 });
    expect((await fresh.outbox.stats()).depth).toBe(1);
    // Every line materialized: the segment is gone, only the spare made for the next append is there.
    await store.openedJournal?.drain();
    expect((await files(join(root, FILE_JOURNAL_DIR))).length).toBeLessThanOrEqual(1);
  });

  it('makes 32 concurrent turns durable with a few shared appends, and keeps each session in order', async () => {
    const sessions = ['a', 'b', 'c', 'd'];
    const results = await Promise.all(
      Array.from({ length: 32 }, (_, i) => turn(store, sessions[i % 4] as string, Math.floor(i / 4) + 1)),
    );
    expect(results.every(Boolean)).toBe(true);
    expect(store.openedJournal?.appends).toBeLessThanOrEqual(3);
    // A session's end queued now comes after its journaled turns.
    await store.outbox.enqueue(sessionDoneEntry('a', TEST_OUTBOX_WORKFLOW));
    const claim = await store.outbox.claim('relay', 10_000, { sessions: 10, entries: 100 });
    const ofA = claim.entries.filter((entry) => entry.sessionId === 'a').map((entry) => entry.message);
    expect(ofA.map((message) => (message.kind === 'turn' ? message.ref.turn : 'done'))).toEqual([
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
      'done',
    ]);
    // The reply-only index names the session's latest turn, as written in order.
    expect(await new FileSampleStore(root).get(storeKey('replies', 'a', 'last'))).toEqual({ n: 8 });
  });

  it('delivers what a writer killed right after its acknowledgements journaled (a real process, SIGKILL)', async () => {
    const writer = join(import.meta.dirname, '..', 'support', 'journal-writer-process.ts');
    const output = await run(process.execPath, ['--import', 'tsx', writer, root, '24']).catch(
      (error: { stdout: string; signal: string }) => {
        expect(error.signal).toBe('SIGKILL');
        return error;
      },
    );
    const acked = output.stdout
      .split('\n')
      .filter((line) => line.startsWith('acked '))
      .map((line) => line.slice('acked '.length));
    expect(acked).toHaveLength(24);
    expect((await files(join(root, FILE_JOURNAL_DIR))).some((name) => name.endsWith('.log'))).toBe(true);

    // The last ones were acknowledged with no I/O completing after them: their files were never written.
    const reader = new FileSampleStore(root);
    const missing = (await Promise.all(acked.map((key) => reader.get(key)))).filter((v) => v === undefined);
    expect(missing.length).toBeGreaterThan(0);

    // The next relay's claim replays the dead writer's journal.
    const claim = await store.outbox.claim('relay', 10_000, { sessions: 10, entries: 100 });
    for (const key of acked) expect(await reader.get(key)).toMatchObject({ turn: expect.any(Number) });
    const delivered = new Set(claim.entries.map((entry) => entry.id));
    for (const key of acked) expect(delivered).toContain(`turn:${key.split('/')[1]}:${key.split('/')[2]}`);
    expect((await files(join(root, FILE_JOURNAL_DIR))).filter((name) => !name.endsWith('.log'))).toEqual([]);
    expect(await files(join(root, FILE_JOURNAL_DIR))).toHaveLength(0);
  }, 60_000);

  it('replays the whole lines of a dead writer and skips the torn one its crash left', async () => {
    const dir = join(root, FILE_JOURNAL_DIR);
    await mkdir(dir, { recursive: true });
    const whole = JSON.stringify({
      key: storeKey('turns', 'z', 1),
      value: { n: 1 },
      outbox: (({ position: _, ...entry }) => entry)(testTurnEntry('z', 1)),
      alongside: [],
    });
    const dead = `${hostname().replace(/[^A-Za-z0-9-]/g, '-')}~999999999~1~deadbeef`;
    await writeFile(join(dir, `${dead}.00000001.log`), `${whole}\n{"key":"turns/z/2","val`);
    await store.recoverJournals();
    expect(await store.get(storeKey('turns', 'z', 1))).toEqual({ n: 1 });
    expect(await store.get(storeKey('turns', 'z', 2))).toBeUndefined();
    expect((await store.outbox.stats()).depth).toBe(1);
    expect(await files(dir)).toEqual([]);
    expect(await files(join(root, FILE_OUTBOX_DIR, 'entries'))).toHaveLength(1);
  });

  it('leaves a live writer’s journal alone', async () => {
    const other = new FileSampleStore(root, { journal: true });
    expect(await turn(other, 'live', 1)).toBe(true);
    await store.recoverJournals();
    await other.close();
    expect(await new FileSampleStore(root).get(storeKey('turns', 'live', 1))).toEqual({ n: 1 });
  });

  // A disk that fails a directory fsync (EIO) under a gateway that keeps answering: the turn was acknowledged, so
  // its line must stay in the journal until its files are durable, and nothing may point at a record that a
  // power loss could still take away (a relay would deliver an entry whose record is missing).
  it('names no entry or index key until its record is durable, and keeps the line until the disk recovers', async () => {
    const recordDir = join(root, 'turns', 'eio');
    const sync = store.directorySyncs.sync.bind(store.directorySyncs);
    let refused = 0;
    let failing = true;
    store.directorySyncs.sync = (dir: string) => {
      if (failing && dir === recordDir) {
        refused++;
        return Promise.reject(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
      }
      return sync(dir);
    };
    expect(await turn(store, 'eio', 1)).toBe(true);
    expect(await turn(store, 'eio', 2)).toBe(true);
    const drained = store.openedJournal?.drain();
    await vi.waitFor(() => expect(refused).toBeGreaterThanOrEqual(2), { timeout: 5_000, interval: 20 });

    const onDisk = new FileSampleStore(root);
    expect((await onDisk.outbox.stats()).depth).toBe(0);
    expect(await onDisk.get(storeKey('continuations', 'eio', 1))).toBeUndefined();
    expect(await onDisk.get(storeKey('replies', 'eio', 'last'))).toBeUndefined();
    expect((await journaledKeys(join(root, FILE_JOURNAL_DIR))).sort()).toEqual([
      storeKey('turns', 'eio', 1),
      storeKey('turns', 'eio', 2),
    ]);
    // This process still reads what it acknowledged; no temporary file is left behind the retries.
    expect(await store.get(storeKey('replies', 'eio', 'last'))).toEqual({ n: 2 });
    expect((await files(recordDir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);

    failing = false;
    await drained;
    expect((await onDisk.outbox.stats()).depth).toBe(2);
    expect(await onDisk.get(storeKey('continuations', 'eio', 2))).toEqual({ n: 2 });
    expect(await onDisk.get(storeKey('replies', 'eio', 'last'))).toEqual({ n: 2 });
    expect(await journaledKeys(join(root, FILE_JOURNAL_DIR))).toEqual([]);
    const entries = await files(join(root, FILE_OUTBOX_DIR, 'entries'));
    expect(entries.filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  // An operator whose gateway uses a core too many looks at `top -H`: the store's threads say what they are,
  // rather than all being "node" beside V8's and libuv's.
  it('names its threads, the journal’s sync thread and the store’s file thread', async () => {
    expect(await turn(store, 'named', 1)).toBe(true);
    await store.openedJournal?.drain(); // its files written on the store's file thread
    const names: string[] = [];
    for (const tid of await readdir('/proc/self/task'))
      names.push((await readFile(`/proc/self/task/${tid}/comm`, 'utf8').catch(() => '')).trim());
    expect(names).toContain('journal-sync');
    expect(names).toContain('store-files');
  });
});
