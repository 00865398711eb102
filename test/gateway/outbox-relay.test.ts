// The relay on the real stores (a folder, a PostgreSQL server): order per session, retries until delivered,
// several relays sharing an outbox without sharing a session, and a stuck relay's sessions taken over once its
// lease runs out. `deliver` here records what it is given; the Temporal side is tested with the real server in
// the gateway and recovery tests.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxRelay } from '../../gateway/outbox-relay.js';
import type { Outbox, OutboxEntry } from '../../store/outbox.js';
import { PostgresSampleStore } from '../../store/postgres-store.js';
import { FileSampleStore, type SampleStore } from '../../store/sample-store.js';
import { testTurnEntry } from '../support/outbox-entries.js';
import { type PostgresServer, startPostgres } from '../support/postgres-server.js';
import { outboxEmpty } from './gateway-fixture.js';

let dir: string;
let postgres: PostgresServer;
let databases = 0;
const opened: SampleStore[] = [];
const relays: OutboxRelay[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'outbox-relay-'));
  postgres = await startPostgres();
}, 60_000);

afterAll(async () => {
  for (const relay of relays) await relay.stop();
  for (const store of opened) await store.close?.();
  await postgres?.destroy();
  await rm(dir, { recursive: true, force: true });
});

const stores = [
  {
    name: 'file',
    make: async (): Promise<SampleStore> => new FileSampleStore(await mkdtemp(join(dir, 'fs-'))),
  },
  {
    name: 'postgres',
    make: async (): Promise<SampleStore> => {
      const store = new PostgresSampleStore({ url: postgres.databaseUrl(`relay_${++databases}`) });
      opened.push(store);
      return store;
    },
  },
];

const entry = (sessionId: string, turn: number): OutboxEntry => testTurnEntry(sessionId, turn);

const turnOf = (e: OutboxEntry) => (e.message.kind === 'turn' ? e.message.ref.turn : 0);

function relayOf(
  store: SampleStore,
  deliver: (e: OutboxEntry) => Promise<void>,
  options: {
    leaseMs?: number;
    concurrency?: number;
    outbox?: Outbox;
    servingIdleMs?: () => number;
    yieldMs?: number;
    pollMs?: number;
    takeOverAfterMs?: number;
  } = {},
) {
  const relay = new OutboxRelay({
    ...(options.servingIdleMs && { servingIdleMs: options.servingIdleMs }),
    ...(options.yieldMs !== undefined && { yieldMs: options.yieldMs }),
    ...(options.takeOverAfterMs !== undefined && { takeOverAfterMs: options.takeOverAfterMs }),
    outbox: options.outbox ?? store.outbox,
    deliver,
    leaseMs: options.leaseMs ?? 2_000,
    concurrency: options.concurrency ?? 32,
    pollMs: options.pollMs ?? 50,
    initialBackoffMs: 20,
    maxBackoffMs: 100,
    attemptTimeoutMs: 1_000,
  });
  relays.push(relay);
  return relay;
}

describe.each(stores)('OutboxRelay on the $name store', ({ name, make }) => {
  it('delivers every entry in order per session, retrying a failing delivery until it goes through', async () => {
    const store = await make();
    for (let turn = 1; turn <= 5; turn++)
      for (const session of ['a', 'b', 'c']) await store.outbox.enqueue(entry(session, turn));
    const delivered = new Map<string, number[]>();
    let failures = 0;
    const relay = relayOf(store, async (e) => {
      // Temporal "down" for the first attempts at a's third turn.
      if (e.sessionId === 'a' && turnOf(e) === 3 && failures < 4) {
        failures++;
        throw new Error('UNAVAILABLE');
      }
      delivered.set(e.sessionId, [...(delivered.get(e.sessionId) ?? []), turnOf(e)]);
    });
    relay.start();
    await outboxEmpty(store, 20_000);
    expect(failures).toBe(4);
    for (const session of ['a', 'b', 'c']) expect(delivered.get(session)).toEqual([1, 2, 3, 4, 5]);
    await relay.stop();
  });

  it('holds a delivery while serving is busy, until serving is idle or the entry is old enough', async () => {
    const store = await make();
    let busy = true;
    const delivered: string[] = [];
    const relay = relayOf(store, async (e) => void delivered.push(e.sessionId), {
      // Answering requests without a pause, then idle for good.
      servingIdleMs: () => (busy ? 0 : 60_000),
      yieldMs: 600_000,
    });
    await store.outbox.enqueue(entry('held', 1));
    // Written 700 s ago: past yieldMs, so delivered however busy serving is.
    await store.outbox.enqueue(testTurnEntry('overdue', 1, Date.now() - 700_000));
    relay.start();
    await expect.poll(() => delivered, { timeout: 10_000 }).toEqual(['overdue']);
    expect(relay.activeSessions).toBe(1); // `held` is claimed and waiting
    busy = false;
    await outboxEmpty(store, 20_000);
    expect(delivered).toEqual(['overdue', 'held']);
    await relay.stop();
  });

  it('claims once serving is idle, not on every turn answered while it is busy', async () => {
    const store = await make();
    let busy = true;
    let claims = 0;
    const counting: Outbox = {
      enqueue: (e) => store.outbox.enqueue(e),
      claim: (holder, leaseMs, limit) => {
        claims++;
        return store.outbox.claim(holder, leaseMs, limit);
      },
      release: (h, s) => store.outbox.release(h, s),
      stats: () => store.outbox.stats(),
      remove: (e) => store.outbox.remove(e),
    };
    const delivered: number[] = [];
    const relay = relayOf(store, async (e) => void delivered.push(turnOf(e)), {
      outbox: counting,
      servingIdleMs: () => (busy ? 0 : 60_000),
      yieldMs: 600_000,
      pollMs: 60_000,
      // Looks while busy are one per quarter lease at most: a long lease keeps this test's 300 ms inside one.
      leaseMs: 60_000,
    });
    relay.start();
    await expect.poll(() => claims).toBe(1); // the first look, at start
    // Twenty turns answered back to back, each nudging the relay.
    for (let turn = 1; turn <= 20; turn++) {
      await store.outbox.enqueue(entry('busy', turn));
      relay.notify();
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(claims).toBe(1);
    expect(delivered).toEqual([]);
    busy = false;
    await outboxEmpty(store, 20_000);
    expect(delivered).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // One claim took them all (a second may follow, for what arrived while its session let go).
    expect(claims).toBeLessThanOrEqual(4);
    await relay.stop();
  });

  // Two gateways serve without a pause, holding deliveries three leases long: each keeps the sessions it took
  // while it waits, so every turn is delivered once, in order, by one of them.
  it('a hold longer than a lease keeps the sessions it holds: each entry delivered once', async () => {
    const store = await make();
    const delivered: string[] = [];
    const busy = { servingIdleMs: () => 0, yieldMs: 6_000, leaseMs: 2_000 };
    const gateways = ['g1', 'g2'].map((name) =>
      relayOf(store, async (e) => void delivered.push(`${e.sessionId}:${turnOf(e)}:${name}`), busy),
    );
    // Written before the relays start, so the first claims take them fresh and they wait out the hold.
    for (const session of ['a', 'b'])
      for (let turn = 1; turn <= 3; turn++) await store.outbox.enqueue(entry(session, turn));
    for (const gateway of gateways) gateway.start();
    await outboxEmpty(store, 30_000);
    for (const session of ['a', 'b']) {
      const mine = delivered.filter((d) => d.startsWith(`${session}:`));
      expect(mine.map((d) => d.split(':')[1])).toEqual(['1', '2', '3']);
      expect(new Set(mine.map((d) => d.split(':')[2])).size).toBe(1);
    }
    for (const gateway of gateways) await gateway.stop();
  });

  // A gateway answers turns back to back and holds their deliveries; the control worker's relay on the same
  // store must not deliver them meanwhile (the CPU the hold gives serving would go to deliveries all the same),
  // and still delivers what a dead gateway left.
  it("a relay standing by leaves a live gateway's held entries to it and takes what a dead one left", async () => {
    const store = await make();
    const byWorker: string[] = [];
    const byGateway: string[] = [];
    const worker = relayOf(store, async (e) => void byWorker.push(e.sessionId), { takeOverAfterMs: 10_000 });
    worker.start();
    const gateway = relayOf(store, async (e) => void byGateway.push(e.sessionId), {
      servingIdleMs: () => 0, // never idle: each entry waits out the hold
      yieldMs: 800,
    });
    gateway.start();
    for (const session of ['a', 'b', 'c']) {
      await store.outbox.enqueue(entry(session, 1));
      gateway.notify();
    }
    await outboxEmpty(store, 20_000);
    expect(byGateway.sort()).toEqual(['a', 'b', 'c']);
    expect(byWorker).toEqual([]);
    await gateway.stop();
    // Left by a gateway that died a minute ago.
    await store.outbox.enqueue(testTurnEntry('left', 1, Date.now() - 60_000));
    await outboxEmpty(store, 20_000);
    expect(byWorker).toEqual(['left']);
    await worker.stop();
  });

  it('an entry whose removal failed is removed later, not delivered again, and holds no place', async () => {
    const store = await make();
    let failedRemovals = 0;
    const flaky: Outbox = {
      enqueue: (e) => store.outbox.enqueue(e),
      claim: (holder, leaseMs, limit) => store.outbox.claim(holder, leaseMs, limit),
      release: (h, s) => store.outbox.release(h, s),
      stats: () => store.outbox.stats(),
      remove: async (e) => {
        if (failedRemovals++ === 0) throw new Error('the store is down');
        await store.outbox.remove(e);
      },
    };
    const delivered: string[] = [];
    // One session at a time: a place kept by `a` after its delivery would keep `b` out.
    const relay = relayOf(store, async (e) => void delivered.push(`${e.sessionId}:${turnOf(e)}`), {
      outbox: flaky,
      concurrency: 1,
    });
    await store.outbox.enqueue(entry('a', 1));
    relay.start();
    await outboxEmpty(store, 20_000);
    await store.outbox.enqueue(entry('b', 1));
    relay.notify();
    await outboxEmpty(store, 20_000);
    expect(delivered).toEqual(['a:1', 'b:1']);
    expect(failedRemovals).toBeGreaterThanOrEqual(2);
    await relay.stop();
  });

  it('three relays on one outbox: each entry delivered, never one session by two relays at once', async () => {
    const store = await make();
    const sessions = Array.from({ length: 12 }, (_, i) => `s${i}`);
    for (let turn = 1; turn <= 4; turn++)
      for (const s of sessions) await store.outbox.enqueue(entry(s, turn));
    const delivered = new Map<string, number[]>();
    const busy = new Set<string>();
    let overlaps = 0;
    const byRelay = [0, 0, 0];
    const deliver = (relay: number) => async (e: OutboxEntry) => {
      if (busy.has(e.sessionId)) overlaps++;
      busy.add(e.sessionId);
      // The first relay holds its first sessions until another relay has delivered something: on PostgreSQL the
      // others must then have taken sessions of their own (the first may lease four at a time).
      if (relay === 0 && name === 'postgres')
        await expect
          .poll(() => (byRelay[1] ?? 0) + (byRelay[2] ?? 0), { timeout: 10_000 })
          .toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 2));
      busy.delete(e.sessionId);
      byRelay[relay] = (byRelay[relay] ?? 0) + 1;
      delivered.set(e.sessionId, [...(delivered.get(e.sessionId) ?? []), turnOf(e)]);
    };
    const three = [0, 1, 2].map((i) => relayOf(store, deliver(i), { concurrency: 4 }));
    for (const relay of three) relay.start();
    // New entries while they run, as gateways write them.
    for (const s of sessions) {
      await store.outbox.enqueue(entry(s, 5));
      three[0]?.notify();
    }
    await outboxEmpty(store, 30_000);
    expect(overlaps).toBe(0);
    for (const s of sessions) expect(delivered.get(s), s).toEqual([1, 2, 3, 4, 5]);
    for (const relay of three) await relay.stop();
    // PostgreSQL leases session by session, so the relays share the work; the filesystem has one lease.
    const working = byRelay.filter((n) => n > 0).length;
    if (name === 'postgres') expect(working).toBeGreaterThan(1);
    else expect(working).toBe(1);
  });

  it('a relay that stops answering loses its sessions to another once its lease runs out', async () => {
    const store = await make();
    await store.outbox.enqueue(entry('stuck', 1));
    await store.outbox.enqueue(entry('stuck', 2));
    // A gateway frozen mid-delivery: its one delivery never returns and it never reaches the store again, so
    // its lease is not renewed.
    let stuckCalls = 0;
    let claims = 0;
    const frozen: Outbox = {
      enqueue: (e) => store.outbox.enqueue(e),
      remove: (e) => store.outbox.remove(e),
      release: (h, s) => store.outbox.release(h, s),
      stats: () => store.outbox.stats(),
      claim: (holder, leaseMs, limit) =>
        claims++ === 0 ? store.outbox.claim(holder, leaseMs, limit) : new Promise(() => {}),
    };
    const stuck = relayOf(
      store,
      () => {
        stuckCalls++;
        return new Promise<void>(() => {});
      },
      { leaseMs: 1_000, outbox: frozen },
    );
    stuck.start();
    await expect.poll(() => stuckCalls, { timeout: 10_000 }).toBe(1);
    const delivered: number[] = [];
    const started = Date.now();
    const other = relayOf(store, async (e) => {
      delivered.push(turnOf(e));
    });
    other.start();
    await outboxEmpty(store, 20_000);
    expect(delivered).toEqual([1, 2]);
    // Not before the stuck relay's lease ran out (claimed with 1 s), and the stuck one never tried turn 2.
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(stuckCalls).toBe(1);
    await other.stop();
  });
});
