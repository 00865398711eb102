// The contract every SampleStore passes (store/sample-store.ts): values under encoded keys, exact numbers,
// putIfAbsent with one winner, sorted listing, keys kept inside the store, a created turn and its outbox
// entry written together, and the outbox's per-session order and leases. The filesystem store (with and without
// its turn journal) and the PostgreSQL store run it: test/store/*-store-contract.test.ts.
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { imageStoreKey, type StoredImage } from '../../core/image-parts.js';
import type { TurnRef } from '../../core/types.js';
import type { ClaimLimit } from '../../store/outbox.js';
import { FileSampleStore, type SampleStore, storeKey } from '../../store/sample-store.js';
import { testTurnEntry } from '../support/outbox-entries.js';

const ref = (sessionId: string, turn: number): TurnRef => ({
  sessionId,
  turn,
  sampleId: `${sessionId}:${turn}`,
  policyVersion: 0,
  kind: 'main',
});

/** The entries of a claim (a journaled turn's entry is claimable once its files are written: waited for). */
async function claimed(store: SampleStore, holder: string, leaseMs: number, limit: ClaimLimit) {
  if (store instanceof FileSampleStore) await store.openedJournal?.drain();
  return (await store.outbox.claim(holder, leaseMs, limit)).entries;
}

/** Two turns in each of four sessions, then two relays claim at once, two sessions each at most. */
async function twoRelaysClaimFourSessions(store: SampleStore) {
  for (const session of ['s1', 's2', 's3', 's4'])
    for (let turn = 1; turn <= 2; turn++) await store.outbox.enqueue(testTurnEntry(session, turn));
  return Promise.all([
    claimed(store, 'relay-a', 10_000, { sessions: 2, entries: 10 }),
    claimed(store, 'relay-b', 10_000, { sessions: 2, entries: 10 }),
  ]);
}

/** How a store's outbox leases: the whole outbox to one relay (the filesystem store, on one machine), or each session. */
export type OutboxLeasing = 'whole-outbox' | 'per-session';

/**
 * The sample store contract: `make` gives a fresh, empty store for each test (a new folder, a new database).
 */
export function describeSampleStoreContract(
  name: string,
  leasing: OutboxLeasing,
  make: () => Promise<SampleStore>,
): void {
  describe(`sample store contract: ${name}`, () => {
    it('round-trips values under encoded keys, any session id included', async () => {
      const store = await make();
      const key = storeKey('turns', 'user/../weird id:1', 3);
      await store.put(key, { tokens: [1, 2, 3], text: 'ü' });
      expect(await store.get(key)).toEqual({ tokens: [1, 2, 3], text: 'ü' });
      expect(await store.get(storeKey('turns', 'absent', 1))).toBeUndefined();
      expect(await store.list('turns')).toEqual([key]);
      await store.put(key, { replaced: true });
      expect(await store.get(key)).toEqual({ replaced: true });
    });

    it('keeps long number arrays exact: token ids, negative and large integers, log-probs', async () => {
      const store = await make();
      const value = {
        promptIds: Array.from({ length: 5000 }, (_, i) => (i * 7919) % 151_936),
        responseLogProbs: Array.from(
          { length: 300 },
          (_, i) => -Math.abs(Math.sin(i)) * 3.25 - 1e-9 * (i + 1),
        ),
        mixed: Array.from({ length: 40 }, (_, i) => (i % 2 ? -(2 ** 40) - i : i)),
        nested: { rows: [Array.from({ length: 64 }, (_, i) => i / 3)], short: [1, 2] },
        notNumbers: Array.from({ length: 40 }, (_, i) => (i === 3 ? 'x' : i)),
      };
      await store.put('samples/s%3A1', value);
      expect(await store.get('samples/s%3A1')).toEqual(value);
    });

    it('putIfAbsent: one of several concurrent writers wins, the value stays the first', async () => {
      const store = await make();
      const key = storeKey('samples', 's:1');
      const results = await Promise.all([1, 2, 3, 4].map((v) => store.putIfAbsent(key, { v })));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true) + 1;
      expect(await store.get(key)).toEqual({ v: winner });
      expect(await store.putIfAbsent(key, { v: 9 })).toBe(false);
    });

    it('lists sorted keys under a prefix, in any table, and deletes', async () => {
      const store = await make();
      await Promise.all([3, 1, 2].map((turn) => store.put(storeKey('turns', 'a', turn), { turn })));
      await store.put(storeKey('turns', 'ab', 1), {});
      await store.put(storeKey('lineage', 'run', 'v1'), { version: 1 });
      await store.put(storeKey('rollouts', 'r1', 'steps', 0), {});
      expect(await store.list('turns/a')).toEqual(['turns/a/1', 'turns/a/2', 'turns/a/3']);
      expect(await store.list('lineage/run')).toEqual(['lineage/run/v1']);
      expect(await store.list('rollouts/r1')).toEqual(['rollouts/r1/steps/0']);
      await store.delete('turns/a/2');
      await store.delete('turns/a/never');
      expect(await store.list('turns')).toEqual(['turns/a/1', 'turns/a/3', 'turns/ab/1']);
    });

    // A user's screenshot sent in many turns, by many sessions at once: its bytes are kept once, exactly.
    it('keeps an image once under its digest: the first write creates it, later ones change nothing', async () => {
      const store = await make();
      const image: StoredImage = {
        mediaType: 'image/png',
        data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 255]).toString('base64'),
      };
      const key = imageStoreKey(`sha256:${'ab'.repeat(32)}`);
      const created = await Promise.all([1, 2, 3].map(() => store.putIfAbsent(key, image)));
      expect(created.filter(Boolean)).toHaveLength(1);
      expect(await store.putIfAbsent(key, { mediaType: 'image/png', data: '' })).toBe(false);
      expect(await store.get(key)).toEqual(image);
      expect(await store.list('images')).toEqual([key]);
    });

    it('rejects keys that would escape the store', async () => {
      const store = await make();
      await expect(store.put('turns/../../etc', {})).rejects.toThrow(/invalid store key/);
    });

    it('a created turn comes with its outbox entry; a turn already there adds none', async () => {
      const store = await make();
      const entry = testTurnEntry('s', 1);
      expect(await store.putIfAbsent('turns/s/1', { turn: 1 }, { outbox: entry })).toBe(true);
      expect(await store.putIfAbsent('turns/s/1', { turn: 1 }, { outbox: testTurnEntry('s', 1) })).toBe(
        false,
      );
      const first = await claimed(store, 'relay-a', 10_000, { sessions: 100, entries: 10 });
      expect(first.map((e) => e.message)).toEqual([{ kind: 'turn', ref: ref('s', 1) }]);
      expect((await store.outbox.stats()).depth).toBe(1);
    });

    it('writes the other keys of a created value with it, and none when the value was already there', async () => {
      const store = await make();
      await store.put('records/kept', { v: 'old' });
      await store.put('replies/s/r', { v: 'old' });
      const alongside = (v: string) => [
        { key: 'records/kept', value: { v }, ifAbsent: true },
        { key: 'replies/s/r', value: { v, ids: [1, -2, 3] }, ifAbsent: false },
        { key: 'continuations/s/c', value: { v }, ifAbsent: true },
      ];
      const entry = testTurnEntry('s', 1);
      expect(
        await store.putIfAbsent('turns/s/1', { turn: 1 }, { outbox: entry, alongside: alongside('new') }),
      ).toBe(true);
      expect(await store.get('records/kept')).toEqual({ v: 'old' });
      expect(await store.get('replies/s/r')).toEqual({ v: 'new', ids: [1, -2, 3] });
      expect(await store.get('continuations/s/c')).toEqual({ v: 'new' });
      expect(
        await store.putIfAbsent(
          'turns/s/1',
          { turn: 1 },
          { outbox: testTurnEntry('s', 1), alongside: alongside('again') },
        ),
      ).toBe(false);
      expect(await store.get('replies/s/r')).toEqual({ v: 'new', ids: [1, -2, 3] });
      expect(await store.get('continuations/s/c')).toEqual({ v: 'new' });
      expect((await store.outbox.stats()).depth).toBe(1);
      // Without an entry too.
      expect(
        await store.putIfAbsent(
          'samples/x',
          { x: 1 },
          { alongside: [{ key: 'lineage/x', value: 2, ifAbsent: true }] },
        ),
      ).toBe(true);
      expect(await store.get('lineage/x')).toBe(2);
    });

    it('reads a small value as any other: written, created with a turn (journaled or in its files), absent', async () => {
      const store = await make();
      await store.put('replies/s/old', { v: 'old' });
      const alongside = [
        { key: 'replies/s/old', value: { v: 'new' }, ifAbsent: false },
        { key: 'continuations/s/c', value: { v: 'c' }, ifAbsent: true },
      ];
      expect(
        await store.putIfAbsent('turns/s/1', { turn: 1 }, { outbox: testTurnEntry('s', 1), alongside }),
      ).toBe(true);
      const small = { small: true };
      const read = async () => [
        await store.get('replies/s/old', small),
        await store.get('continuations/s/c', small),
        await store.get('continuations/s/absent', small),
      ];
      expect(await read()).toEqual([{ v: 'new' }, { v: 'c' }, undefined]);
      if (!(store instanceof FileSampleStore)) return;
      await store.openedJournal?.drain();
      expect(await read()).toEqual([{ v: 'new' }, { v: 'c' }, undefined]);
      // Every temporary file became a name or was removed, for a turn created and for one that was there.
      expect(
        await store.putIfAbsent('turns/s/1', { turn: 1 }, { outbox: testTurnEntry('s', 1), alongside }),
      ).toBe(false);
      await store.openedJournal?.drain();
      const files = await readdir(store.root, { recursive: true });
      expect(files.filter((name) => name.endsWith('.tmp'))).toEqual([]);
    });

    it('outbox: entries in order per session; one holder at a time; removed once delivered', async () => {
      const store = await make();
      for (let turn = 1; turn <= 3; turn++) {
        await store.outbox.enqueue(testTurnEntry('s1', turn, 1_000 + turn));
        await store.outbox.enqueue(testTurnEntry('s2', turn, 1_000 + turn));
      }
      const stats = await store.outbox.stats();
      expect(stats).toEqual({ depth: 6, oldestCreatedAt: 1_001 });

      const a = await claimed(store, 'relay-a', 10_000, { sessions: 100, entries: 100 });
      const turnsOf = (session: string) =>
        a
          .filter((e) => e.sessionId === session)
          .map((e) => (e.message.kind === 'turn' ? e.message.ref.turn : 0));
      expect(turnsOf('s1')).toEqual([1, 2, 3]);
      expect(turnsOf('s2')).toEqual([1, 2, 3]);
      // Another relay gets nothing while relay-a's lease runs; relay-a renews its own.
      expect(await claimed(store, 'relay-b', 10_000, { sessions: 100, entries: 100 })).toEqual([]);
      expect(await claimed(store, 'relay-a', 10_000, { sessions: 100, entries: 100 })).toHaveLength(6);

      await store.outbox.remove(a.slice(0, 2));
      expect((await store.outbox.stats()).depth).toBe(4);
      await store.outbox.release('relay-a');
      const b = await claimed(store, 'relay-b', 10_000, { sessions: 100, entries: 100 });
      expect(b).toHaveLength(4);
      expect(b.map((e) => e.id)).toEqual(a.slice(2).map((e) => e.id));
    });

    it('outbox: a lease that ran out is taken by another holder', async () => {
      const store = await make();
      await store.outbox.enqueue(testTurnEntry('s', 1));
      expect(await claimed(store, 'dead', 200, { sessions: 100, entries: 10 })).toHaveLength(1);
      expect(await claimed(store, 'alive', 10_000, { sessions: 100, entries: 10 })).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await claimed(store, 'alive', 10_000, { sessions: 100, entries: 10 })).toHaveLength(1);
      expect(await claimed(store, 'dead', 200, { sessions: 100, entries: 10 })).toEqual([]);
    });

    it('outbox: a relay standing by leases only what was written before its cutoff', async () => {
      const store = await make();
      const now = Date.now();
      await store.outbox.enqueue(testTurnEntry('fresh', 1, now));
      const standBy = { sessions: 100, entries: 10, writtenBefore: now - 5_000 };
      // Only fresh entries: nothing taken, and the lease stays free for the relay that wrote them.
      expect(await claimed(store, 'stand-by', 10_000, standBy)).toEqual([]);
      expect(await claimed(store, 'writer', 10_000, { sessions: 100, entries: 10 })).toHaveLength(1);
      await store.outbox.release('writer');
      // An entry left from before the cutoff (its writer died): taken, and with it, where one lease covers the
      // outbox, everything else.
      await store.outbox.enqueue(testTurnEntry('left', 1, now - 60_000));
      const taken = await claimed(store, 'stand-by', 10_000, standBy);
      expect(taken.map((e) => e.sessionId).sort()).toEqual(
        leasing === 'whole-outbox' ? ['fresh', 'left'] : ['left'],
      );
    });

    if (leasing === 'whole-outbox')
      it('leases the whole outbox: one of two relays gets every session until it lets go of all', async () => {
        const store = await make();
        const [a, b] = await twoRelaysClaimFourSessions(store);
        // One relay won the lease and took the first two sessions; the other got nothing.
        const [winner, loser] =
          a.length > 0 ? (['relay-a', 'relay-b'] as const) : (['relay-b', 'relay-a'] as const);
        expect([a.length, b.length].sort()).toEqual([0, 4]);
        expect(new Set([...a, ...b].map((e) => e.sessionId))).toEqual(new Set(['s1', 's2']));
        // Releasing one session means nothing here; releasing the whole lease hands everything over.
        await store.outbox.release(winner, ['s1']);
        expect(await claimed(store, loser, 10_000, { sessions: 100, entries: 10 })).toEqual([]);
        await store.outbox.release(winner);
        const all = await store.outbox.claim(loser, 10_000, { sessions: 100, entries: 10 });
        expect(all.sessions).toBe('all');
        expect(all.entries).toHaveLength(8);
      });

    if (leasing === 'per-session')
      it('leases sessions one by one: two relays share the work without sharing a session', async () => {
        const store = await make();
        const [a, b] = await twoRelaysClaimFourSessions(store);
        const sessionsA = new Set((a ?? []).map((e) => e.sessionId));
        const sessionsB = new Set((b ?? []).map((e) => e.sessionId));
        for (const session of sessionsA) expect(sessionsB.has(session)).toBe(false);
        expect(sessionsA.size + sessionsB.size).toBeGreaterThanOrEqual(2);
        // Releasing one session lets the other relay take it at once.
        const [first] = [...sessionsA];
        if (first) {
          await store.outbox.release('relay-a', [first]);
          const again = await store.outbox.claim('relay-b', 10_000, { sessions: 100, entries: 10 });
          expect(again.entries.some((e) => e.sessionId === first)).toBe(true);
          // A claim renews every lease its holder has, and names them: here every session but those `a` still
          // holds (when both first claims picked the same two sessions, `b` may have got none of them).
          expect(again.sessions).toContain(first);
          const held = [...sessionsA].filter((session) => session !== first);
          expect(new Set(again.sessions)).toEqual(
            new Set(['s1', 's2', 's3', 's4'].filter((s) => !held.includes(s))),
          );
        }
      });
  });
}
