// `Idempotency-Key` (Stripe's convention, also the IETF httpapi draft): a client that retries a request with
// the key it first sent gets the response it was first given, byte for byte and streams included, without the
// engine generating again, so a retry never trains a reply the user did not see. Keys are scoped by the
// caller's API key and kept `gateway.idempotencyTtlMs` (a day by default) in the sample store, which several
// gateways share. The same key with a different request is a 422; a retry while the first attempt is still
// running is a 409 (retry shortly). While it runs, the first attempt holds a lease it renews; if its gateway
// dies or stalls, the lease runs out within `leaseMs` and one retry takes the key over and generates afresh. A
// request that failed releases its key. Each of these moves is a compare-and-set on the key's holder
// (idempotency-chain.ts): of retries racing for an expired key one wins, the others get the 409, and an attempt
// that lost its key stores nothing (its client gets a 409 and, retrying, the response that was kept).

import { z } from 'zod';
import type { SampleStore } from '../store/sample-store.js';
import { newHolder, StateChain } from './idempotency-chain.js';
import { invalidRequest, OpenAIError } from './openai-errors.js';
import { canonicalJson, sha256Hex } from './request-hash.js';
import { DEFAULT_RETRY, type RetryOptions, withRetry } from './retry.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** Set on a replayed response (Stripe's name). */
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';

/** Stripe's limit; printable ASCII only, so the key means the same to every client library. */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

const fingerprint = z.string().regex(/^[0-9a-f]{64}$/);
const storedResponseSchema = z.object({
  status: z.number().int().min(100).max(599),
  contentType: z.string().min(1),
  body: z.string(),
});
export type StoredResponse = z.infer<typeof storedResponseSchema>;

/**
 * A state of a key. Every state names a holder (`owner`, a token unique to the request or the step that wrote
 * it); the state after holder T is the value of T's successor key, which create-if-absent writes once: that is
 * the compare-and-set (see IdempotencyChain). `owner` is absent only on responses stored before holders chained.
 */
const entrySchema = z.discriminatedUnion('state', [
  z.object({
    state: z.literal('in-flight'),
    fingerprint,
    owner: z.string().min(1),
    expiresAt: z.number(),
  }),
  z.object({
    state: z.literal('done'),
    fingerprint,
    owner: z.string().min(1).optional(),
    response: storedResponseSchema,
    sampleId: z.string().nullable(),
    completedAt: z.number(),
    expiresAt: z.number(),
  }),
  /** The holder failed: the key is free for the next request. */
  z.object({ state: z.literal('released'), owner: z.string().min(1) }),
  /** Being removed (its time is over): nobody may take it over; its head is deleted next. */
  z.object({ state: z.literal('swept'), owner: z.string().min(1) }),
]);
type Entry = z.infer<typeof entrySchema>;
type InFlight = Extract<Entry, { state: 'in-flight' }>;

/** The key a request carries, or null without one; a malformed key is a 400 naming the header. */
export function idempotencyKeyOf(headers: Readonly<Record<string, string | string[] | undefined>>) {
  const raw = headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return null;
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (key === undefined || !KEY_PATTERN.test(key) || key.trim() === '')
    throw invalidRequest(
      'Idempotency-Key must be 1-255 printable ASCII characters',
      'Idempotency-Key',
      'invalid_idempotency_key',
    );
  return key;
}

/** What makes two requests "the same request" for a key: the whole body and how the gateway read it. */
export function requestFingerprint(parts: Record<string, unknown>): string {
  return sha256Hex(canonicalJson(parts));
}

export interface IdempotencyOptions {
  store: SampleStore;
  /** How long a completed response is kept for replay. */
  ttlMs: number;
  /** How long an attempt's claim lasts without renewal (renewed every third of it while the attempt runs). */
  leaseMs?: number;
  retry?: RetryOptions;
  clock?: () => number;
}

export type IdempotencyStart =
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'claimed'; claim: IdempotencyClaim };

export class IdempotencyKeys {
  readonly ttlMs: number;
  readonly leaseMs: number;
  private readonly retry: RetryOptions;
  readonly clock: () => number;

  constructor(private readonly options: IdempotencyOptions) {
    this.ttlMs = options.ttlMs;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.clock = options.clock ?? Date.now;
  }

  /** Claims the key for this attempt, or returns the response to replay; throws the 409 / 422. */
  async begin(request: { scope: string; key: string; fingerprint: string }): Promise<IdempotencyStart> {
    const chain = this.chainOf(idempotencyStoreKey(request.scope, request.key));
    for (let attempt = 0; attempt < 5; attempt++) {
      const lock: InFlight = {
        state: 'in-flight',
        fingerprint: request.fingerprint,
        owner: newHolder(),
        expiresAt: this.clock() + this.leaseMs,
      };
      if (await chain.create(lock))
        return { kind: 'claimed', claim: new IdempotencyClaim(this, chain, lock, lock.owner) };
      const latest = await chain.latest();
      if (latest.kind === 'absent') continue; // removed in between
      if (latest.kind === 'unreadable') {
        await chain.remove();
        continue;
      }
      const { state, headOwner } = latest;
      if (state.state === 'swept') {
        // Being removed right now: the key is free once its head is gone.
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      if (await this.isFree(chain, state)) {
        if (state.owner === undefined) await chain.remove();
        // Taken over only if `state` is still the latest: one of any number of racers gets it.
        else if (await chain.advance({ owner: state.owner, headOwner }, lock))
          return { kind: 'claimed', claim: new IdempotencyClaim(this, chain, lock, headOwner) };
        continue;
      }
      if (state.state === 'released') continue; // unreachable: a released key is free
      if (state.fingerprint !== request.fingerprint)
        throw new OpenAIError(
          422,
          'this Idempotency-Key was already used with a different request; use a new key for a new request',
          'invalid_request_error',
          'Idempotency-Key',
          'idempotency_key_reused',
        );
      if (state.state === 'in-flight')
        throw new OpenAIError(
          409,
          'a request with this Idempotency-Key is still being answered; retry shortly to get its response',
          'invalid_request_error',
          'Idempotency-Key',
          'idempotency_key_in_use',
          1,
        );
      return { kind: 'replay', response: state.response };
    }
    throw new OpenAIError(
      409,
      'this Idempotency-Key is contended; retry shortly',
      'invalid_request_error',
      'Idempotency-Key',
      'idempotency_key_in_use',
      1,
    );
  }

  /** Deletes entries whose time is over; returns how many. */
  async sweepExpired(): Promise<number> {
    let removed = 0;
    for (const key of await this.io((store) => store.list(HEADS))) {
      const chain = this.chainOf(key);
      const latest = await chain.latest();
      if (latest.kind === 'absent') continue;
      if (latest.kind === 'state' && latest.state.state !== 'swept') {
        const { state, headOwner } = latest;
        if (!(await this.isFree(chain, state))) continue;
        // Fenced first, so nobody takes it over while it is removed.
        const swept: Entry = { state: 'swept', owner: newHolder() };
        if (state.owner !== undefined && !(await chain.advance({ owner: state.owner, headOwner }, swept)))
          continue;
      }
      await chain.remove();
      removed++;
    }
    return removed;
  }

  /** Whether a state leaves the key free: released, or its time (a lease, or a response's) is over. */
  private async isFree(chain: StateChain<Entry>, state: Entry): Promise<boolean> {
    const now = this.clock();
    if (state.state === 'released') return true;
    if (state.state === 'swept') return false;
    if (state.expiresAt > now) return false;
    if (state.state === 'done') return true;
    return ((await chain.leaseOf(state.owner)) ?? 0) <= now;
  }

  private chainOf(storeKey: string): StateChain<Entry> {
    return new StateChain(
      (operation) => this.io(operation),
      entrySchema,
      storeKey,
      storeKey.replace(/^idempotency\//, `${CHAINS}/`),
    );
  }

  /** @internal store access for claims */
  io<T>(operation: (store: SampleStore) => Promise<T>): Promise<T> {
    return withRetry(() => operation(this.options.store), this.retry);
  }
}

/**
 * One attempt's hold on a key: renewed while the attempt runs, then either completed with the response (which
 * is what a retry replays) or released (the attempt failed; a retry runs afresh). Both write only while the
 * attempt still holds the key: after its lease ran out and a retry took the key over, they change nothing.
 */
export class IdempotencyClaim {
  private renewals: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  private settled = false;

  constructor(
    private readonly keys: IdempotencyKeys,
    private readonly chain: StateChain<Entry>,
    private readonly lock: InFlight,
    private readonly headOwner: string | undefined,
  ) {
    this.timer = setInterval(() => {
      this.renewals = this.renewals.then(() => this.renew()).catch(() => undefined);
    }, keys.leaseMs / 3);
    this.timer.unref();
  }

  /**
   * Stores the response exactly as it is sent; call before its last byte reaches the client. Throws a 409 when
   * the attempt no longer holds the key (a retry took it over): that retry's response is the one kept.
   */
  async complete(response: StoredResponse, sampleId: string | null): Promise<void> {
    await this.stopRenewing();
    const now = this.keys.clock();
    const done: Entry = {
      state: 'done',
      owner: newHolder(),
      fingerprint: this.lock.fingerprint,
      response,
      sampleId,
      completedAt: now,
      expiresAt: now + this.keys.ttlMs,
    };
    if (!(await this.chain.advance(this.from(), done)))
      throw new OpenAIError(
        409,
        'this request took too long and a retry with its Idempotency-Key was answered instead; retry to get that response',
        'invalid_request_error',
        'Idempotency-Key',
        'idempotency_key_taken_over',
        1,
      );
    this.settled = true;
  }

  /** Frees the key unless the attempt completed (an attempt that failed must not block its retry). */
  async releaseUnlessCompleted(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.stopRenewing();
    await this.chain.advance(this.from(), { state: 'released', owner: newHolder() });
  }

  private from(): { owner: string; headOwner: string | undefined } {
    return { owner: this.lock.owner, headOwner: this.headOwner };
  }

  private async stopRenewing(): Promise<void> {
    clearInterval(this.timer);
    await this.renewals;
  }

  private async renew(): Promise<void> {
    if (this.settled) return;
    await this.chain.renew(this.lock.owner, this.keys.clock() + this.keys.leaseMs);
  }
}

/** Where keys' first states live, and their chains (idempotency-chain.ts). */
const HEADS = 'idempotency';
const CHAINS = 'idempotency-chain';

function idempotencyStoreKey(scope: string, key: string): string {
  return [HEADS, scope || 'open', sha256Hex(key)].map(encodeURIComponent).join('/');
}
