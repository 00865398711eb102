// `Idempotency-Key` (Stripe's convention, also the IETF httpapi draft): a client that retries a request with
// the key it first sent gets the response it was first given, byte for byte and streams included, without the
// engine generating again, so a retry never trains a reply the user did not see. Keys are scoped by the
// caller's API key and kept `gateway.idempotencyTtlMs` (a day by default) in the sample store, which several
// gateways share. The same key with a different request is a 422; a retry while the first attempt is still
// running is a 409 (retry shortly). While it runs, the first attempt holds a lease it renews; if its gateway
// dies, the lease runs out within `leaseMs` and a retry generates afresh. A request that failed releases its key.

import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { SampleStore } from '../store/sample-store.js';
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
    response: storedResponseSchema,
    sampleId: z.string().nullable(),
    completedAt: z.number(),
    expiresAt: z.number(),
  }),
]);
type Entry = z.infer<typeof entrySchema>;

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
    const storeKey = idempotencyStoreKey(request.scope, request.key);
    for (let attempt = 0; attempt < 3; attempt++) {
      const owner = randomUUID();
      const lock: Entry = {
        state: 'in-flight',
        fingerprint: request.fingerprint,
        owner,
        expiresAt: this.clock() + this.leaseMs,
      };
      if (await this.io(() => this.options.store.putIfAbsent(storeKey, lock))) {
        return { kind: 'claimed', claim: new IdempotencyClaim(this, storeKey, lock) };
      }
      const raw = await this.io(() => this.options.store.get(storeKey));
      const parsed = entrySchema.safeParse(raw);
      if (raw !== undefined && (!parsed.success || parsed.data.expiresAt <= this.clock())) {
        // Expired (or unreadable): the key is free again. Take it over.
        await this.io(() => this.options.store.delete(storeKey));
        continue;
      }
      if (!parsed.success) continue; // gone in between
      const entry = parsed.data;
      if (entry.fingerprint !== request.fingerprint)
        throw new OpenAIError(
          422,
          'this Idempotency-Key was already used with a different request; use a new key for a new request',
          'invalid_request_error',
          'Idempotency-Key',
          'idempotency_key_reused',
        );
      if (entry.state === 'in-flight')
        throw new OpenAIError(
          409,
          'a request with this Idempotency-Key is still being answered; retry shortly to get its response',
          'invalid_request_error',
          'Idempotency-Key',
          'idempotency_key_in_use',
          1,
        );
      return { kind: 'replay', response: entry.response };
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
    const store = this.options.store;
    let removed = 0;
    for (const key of await this.io(() => store.list('idempotency'))) {
      const parsed = entrySchema.safeParse(await this.io(() => store.get(key)));
      if (parsed.success && parsed.data.expiresAt > this.clock()) continue;
      await this.io(() => store.delete(key));
      removed++;
    }
    return removed;
  }

  /** @internal store access for claims */
  io<T>(operation: (store: SampleStore) => Promise<T>): Promise<T> {
    return withRetry(() => operation(this.options.store), this.retry);
  }
}

/**
 * One attempt's hold on a key: renewed while the attempt runs, then either completed with the response (which
 * is what a retry replays) or released (the attempt failed; a retry runs afresh).
 */
export class IdempotencyClaim {
  private renewals: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  private settled = false;

  constructor(
    private readonly keys: IdempotencyKeys,
    private readonly storeKey: string,
    private readonly lock: Extract<Entry, { state: 'in-flight' }>,
  ) {
    this.timer = setInterval(() => {
      this.renewals = this.renewals.then(() => this.renew()).catch(() => undefined);
    }, keys.leaseMs / 3);
    this.timer.unref();
  }

  /** Stores the response exactly as it is sent; call before its last byte reaches the client. */
  async complete(response: StoredResponse, sampleId: string | null): Promise<void> {
    await this.stopRenewing();
    const now = this.keys.clock();
    const done: Entry = {
      state: 'done',
      fingerprint: this.lock.fingerprint,
      response,
      sampleId,
      completedAt: now,
      expiresAt: now + this.keys.ttlMs,
    };
    await this.keys.io((store) => store.put(this.storeKey, done));
    this.settled = true;
  }

  /** Frees the key unless the attempt completed (an attempt that failed must not block its retry). */
  async releaseUnlessCompleted(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.stopRenewing();
    if (await this.stillOwned()) await this.keys.io((store) => store.delete(this.storeKey));
  }

  private async stopRenewing(): Promise<void> {
    clearInterval(this.timer);
    await this.renewals;
  }

  private async renew(): Promise<void> {
    if (this.settled || !(await this.stillOwned())) return;
    const renewed: Entry = { ...this.lock, expiresAt: this.keys.clock() + this.keys.leaseMs };
    await this.keys.io((store) => store.put(this.storeKey, renewed));
  }

  private async stillOwned(): Promise<boolean> {
    const parsed = entrySchema.safeParse(await this.keys.io((store) => store.get(this.storeKey)));
    return parsed.success && parsed.data.state === 'in-flight' && parsed.data.owner === this.lock.owner;
  }
}

function idempotencyStoreKey(scope: string, key: string): string {
  return ['idempotency', scope || 'open', sha256Hex(key)].map(encodeURIComponent).join('/');
}
