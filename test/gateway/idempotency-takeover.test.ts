// Taking over an Idempotency-Key whose holder stalled, on each sample store (files, a real PostgreSQL server):
// when the holder's lease has run out, retries racing for the key get it once between them, and the stalled
// holder, waking up, can neither write its response over the one kept nor free the key its successor holds.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyKeys, requestFingerprint, type StoredResponse } from '../../gateway/idempotency.js';
import { OpenAIError } from '../../gateway/openai-errors.js';
import { PostgresSampleStore } from '../../store/postgres-store.js';
import { FileSampleStore, type SampleStore } from '../../store/sample-store.js';
import { type PostgresServer, startPostgres } from '../support/postgres-server.js';

const LEASE_MS = 60_000;
const fingerprint = requestFingerprint({ body: 'same request' });
const response = (text: string): StoredResponse => ({ status: 200, contentType: 'text/plain', body: text });

let dir: string;
let postgres: PostgresServer;
const stores: SampleStore[] = [];

beforeAll(async () => {
  [dir, postgres] = await Promise.all([mkdtemp(join(tmpdir(), 'idempotency-takeover-')), startPostgres()]);
}, 60_000);

afterAll(async () => {
  for (const store of stores) await store.close?.();
  await postgres?.destroy();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const backends: [string, () => SampleStore][] = [
  ['FileSampleStore', () => new FileSampleStore(join(dir, `files-${stores.length}`))],
  [
    'PostgresSampleStore',
    () => new PostgresSampleStore({ url: postgres.databaseUrl(`idem_${stores.length}`) }),
  ],
];

describe.each(backends)('Idempotency-Key takeover on %s', (_name, open) => {
  /** Keys on one store whose clock the test moves: a lease runs out when the clock passes it. */
  function keysOnOneStore() {
    const store = open();
    stores.push(store);
    let now = 1_000_000;
    const keys = () =>
      new IdempotencyKeys({ store, ttlMs: 10 * LEASE_MS, leaseMs: LEASE_MS, clock: () => now });
    return { keys, pass: (ms: number) => (now += ms) };
  }
  const request = { scope: 'alice', key: 'key-1', fingerprint };

  async function claimOf(keys: IdempotencyKeys) {
    const started = await keys.begin(request);
    if (started.kind !== 'claimed') throw new Error('expected a claim');
    return started.claim;
  }

  it('lets one of many racing retries take over an expired key, and keeps its response, not the stalled one', async () => {
    // The first attempt stalls past its lease; six retries race for the key: before, each deleted the expired
    // entry and several claimed it, and the stalled attempt's late response was written over the one kept.
    const { keys, pass } = keysOnOneStore();
    const stalled = await claimOf(keys());
    pass(2 * LEASE_MS);
    const racers = await Promise.allSettled(Array.from({ length: 6 }, () => keys().begin(request)));
    const claims = racers.flatMap((r) => (r.status === 'fulfilled' && r.value.kind === 'claimed' ? [r] : []));
    expect(claims).toHaveLength(1);
    for (const lost of racers.filter((r) => r.status === 'rejected'))
      expect((lost.reason as OpenAIError).code).toBe('idempotency_key_in_use');

    // Held by the one that took it over.
    expect(await claimOf(keys()).catch(() => null)).toBeNull();
    const taker =
      claims[0]?.status === 'fulfilled' && claims[0].value.kind === 'claimed' ? claims[0].value : null;
    await expect(stalled.complete(response('stalled'), null)).rejects.toMatchObject({
      status: 409,
      code: 'idempotency_key_taken_over',
    });
    await taker?.claim.complete(response('kept'), null);
    await stalled.releaseUnlessCompleted();
    expect(await keys().begin(request)).toEqual({ kind: 'replay', response: response('kept') });
  });

  it('does not let a stalled attempt free the key its successor holds', async () => {
    const { keys, pass } = keysOnOneStore();
    const stalled = await claimOf(keys());
    pass(2 * LEASE_MS);
    const successor = await claimOf(keys());
    await stalled.releaseUnlessCompleted();
    await expect(keys().begin(request)).rejects.toBeInstanceOf(OpenAIError);
    // Its own release does free it.
    await successor.releaseUnlessCompleted();
    const next = await claimOf(keys());
    await next.complete(response('after'), null);
    expect(await keys().begin(request)).toMatchObject({ kind: 'replay', response: response('after') });
  });

  it('keeps a renewed lease, and forgets a response once its time is over', async () => {
    const { keys, pass } = keysOnOneStore();
    const renewing = keys();
    const holder = await claimOf(renewing);
    pass(LEASE_MS / 2);
    // Renewed as the timer would: the lease now ends a full lease from here.
    await (holder as unknown as { renew(): Promise<void> }).renew();
    pass(LEASE_MS * 0.9);
    await expect(keys().begin(request)).rejects.toMatchObject({ code: 'idempotency_key_in_use' });
    await holder.complete(response('first'), null);
    pass(11 * LEASE_MS);
    expect(await renewing.sweepExpired()).toBe(1);
    const fresh = await claimOf(keys());
    await fresh.complete(response('second'), null);
    expect(await keys().begin(request)).toMatchObject({ kind: 'replay', response: response('second') });
  });
});
