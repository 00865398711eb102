// Compare-and-set on a key's holder, built on create-if-absent: the one atomic write every sample store has (a
// file link, PostgreSQL's INSERT ... ON CONFLICT DO NOTHING), so it holds alike for every store and for several
// gateways sharing one. A key's first state is written at its head; every later state is the successor of the
// state before it, at `<chain>/next-<holder of that state>`. Moving on from holder T is creating that key: of
// any number of writers that read T as the latest state (a stalled holder completing, two retries taking over
// its expired lease), exactly one succeeds, and nothing is ever written over. The chain is removed whole once
// its time is over. A holder renews its lease in a key of its own (`<chain>/lease-<holder>`), which only it
// writes, so a renewal can never land on someone else's state.

import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { SampleStore } from '../store/sample-store.js';

/** Every state names its holder; only states written before chains existed may lack one (they end a chain). */
export interface ChainState {
  owner?: string | undefined;
}

export type Latest<S> =
  | { kind: 'absent' }
  | { kind: 'unreadable' }
  /** `headOwner`: the holder of the head state, which tells this chain from a later one at the same key. */
  | { kind: 'state'; state: S; headOwner: string | undefined };

/** Beyond this many states a chain is taken for damaged (a real one has a handful: claims, takeovers, done). */
const MAX_LENGTH = 1_000;

export class StateChain<S extends ChainState> {
  constructor(
    private readonly io: <T>(operation: (store: SampleStore) => Promise<T>) => Promise<T>,
    private readonly schema: z.ZodType<S>,
    /** Where the first state lives. */
    readonly head: string,
    /** Folder of the successors and leases. */
    private readonly folder: string,
  ) {}

  /** Writes the first state; false when the key already has one. */
  create(state: S): Promise<boolean> {
    return this.io((store) => store.putIfAbsent(this.head, state));
  }

  /** The latest state, following successors from the head. */
  async latest(): Promise<Latest<S>> {
    const raw = await this.io((store) => store.get(this.head));
    if (raw === undefined) return { kind: 'absent' };
    let parsed = this.schema.safeParse(raw);
    if (!parsed.success) return { kind: 'unreadable' };
    const headOwner = parsed.data.owner;
    for (let length = 0; length < MAX_LENGTH; length++) {
      const owner = parsed.data.owner;
      if (owner === undefined) break;
      const next = await this.io((store) => store.get(this.successorKey(owner)));
      if (next === undefined) break;
      const nextParsed = this.schema.safeParse(next);
      if (!nextParsed.success) return { kind: 'unreadable' };
      parsed = nextParsed;
    }
    return { kind: 'state', state: parsed.data, headOwner };
  }

  /**
   * Writes `next` as the successor of `from`'s holder: true only for the one writer that does it, and only
   * while the chain `from` was read in is still the key's (a chain removed meanwhile is not written to).
   */
  async advance(from: { owner: string; headOwner: string | undefined }, next: S): Promise<boolean> {
    const key = this.successorKey(from.owner);
    if (!(await this.io((store) => store.putIfAbsent(key, next)))) return false;
    const head = this.schema.safeParse(await this.io((store) => store.get(this.head)));
    if (head.success && head.data.owner === from.headOwner) return true;
    // The chain was removed while `from` was read (its time was over): the write went nowhere.
    await this.io((store) => store.delete(key)).catch(() => undefined);
    return false;
  }

  /** Extends a holder's lease; only that holder calls this. */
  renew(owner: string, expiresAt: number): Promise<void> {
    return this.io((store) => store.put(this.leaseKey(owner), { expiresAt }));
  }

  /** When a holder's renewed lease ends (null: never renewed). */
  async leaseOf(owner: string): Promise<number | null> {
    const raw = (await this.io((store) => store.get(this.leaseKey(owner)))) as
      | { expiresAt?: unknown }
      | undefined;
    return typeof raw?.expiresAt === 'number' ? raw.expiresAt : null;
  }

  /**
   * Deletes the head, then the successors and leases: a writer that read the chain before sees the head gone
   * when it checks (advance), so nothing it writes afterwards counts.
   */
  async remove(): Promise<void> {
    await this.io((store) => store.delete(this.head));
    for (const key of await this.io((store) => store.list(this.folder)))
      await this.io((store) => store.delete(key));
  }

  private successorKey(owner: string): string {
    return `${this.folder}/next-${encodeURIComponent(owner)}`;
  }

  private leaseKey(owner: string): string {
    return `${this.folder}/lease-${encodeURIComponent(owner)}`;
  }
}

/** A fresh holder token. */
export function newHolder(): string {
  return randomUUID();
}
