// The relay of the durable hand-off: takes entries from the store's outbox and delivers each to its session
// workflow, in order per session, retrying with backoff until it is delivered, then removes it. Serving never
// waits on it: the gateway answers a main turn once the turn and its entry are durable and only nudges the
// relay. Every gateway runs one, and so does the control worker; the outbox leases each session to one relay at
// a time, so a dead gateway's entries are delivered by another process once its lease runs out.
//
// A relay acts only while it is sure of its lease: a claim made at time t is trusted until t + leaseMs/2 (the
// filesystem outbox renews its lease when half of it has run; PostgreSQL renews it in full on every claim), and
// every delivery attempt carries a deadline inside that window. A claim that fails (the store is down) is not
// renewed, so deliveries stop before another relay may take over.
//
// Delivery may yield to serving: each delivery costs CPU here, on the Temporal server and in the control worker,
// which on a small machine is taken from generation. With `yieldMs`, while the gateway is answering requests,
// an entry waits until serving has been idle for QUIET_MS, or until it is `yieldMs` old, whichever comes first;
// the turn is already durable, so only its delivery lag grows. A moment between two back-to-back requests is not
// idle: were it, every held delivery would start at once, just as the next request does.
//
// A relay that serves nothing (the control worker's) stands by with `takeOverAfterMs`: it takes only sessions
// whose oldest entry is older than that, which a live gateway's relay would have delivered by then. Were it to
// take fresh entries, it would deliver what a gateway holds back while serving, on the same machine.

import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Claim, Outbox, OutboxEntry } from '../store/outbox.js';

export interface RelayEvents {
  delivered?(entry: OutboxEntry, lagMs: number): void;
  deliveryFailed?(entry: OutboxEntry, error: unknown): void;
  claimFailed?(error: unknown): void;
}

export interface OutboxRelayOptions {
  outbox: Outbox;
  /** Hands one entry to its session workflow; resolves once Temporal accepted it. `deadline`: epoch ms. */
  deliver(entry: OutboxEntry, deadline: number): Promise<void>;
  /** Names this relay in the outbox's leases (default: host, pid and a random part). */
  holder?: string;
  /** How long a claimed session stays this relay's without a renewal (default 10 s). */
  leaseMs?: number;
  /** How often the outbox is looked at for entries others wrote or a dead relay left (default 500 ms). */
  pollMs?: number;
  /** Entries taken per claim (default 256). */
  batch?: number;
  /** Sessions delivered at the same time (default 32). */
  concurrency?: number;
  /** Backoff between attempts at one entry: doubled each time, with jitter (default 200 ms to 5 s). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Longest a single delivery attempt may take (default 10 s). */
  attemptTimeoutMs?: number;
  /** How long serving has been idle, ms (0 while the gateway answers a request); deliveries may wait for it. */
  servingIdleMs?: () => number;
  /** Longest an entry waits for serving to be idle, from its `createdAt` (default 10 s; 0: never waits). */
  yieldMs?: number;
  /** Leaves sessions whose oldest entry is younger than this to the relays that wrote them (default 0). */
  takeOverAfterMs?: number;
  events?: RelayEvents;
}

/** How often a relay waiting for serving to be idle looks again. */
const IDLE_POLL_MS = 10;
/** Serving counts as idle once it has answered nothing for this long. */
const QUIET_MS = 50;

interface SessionQueue {
  entries: OutboxEntry[];
  /** Positions of every entry taken in this drain, so a claim that returns one again does not repeat it. */
  seen: Set<string>;
  /** performance.now() until which this relay may deliver the session's entries. */
  validUntil: number;
  closing: boolean;
  running: boolean;
}

export class OutboxRelay {
  readonly holder: string;
  private readonly outbox: Outbox;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly batch: number;
  private readonly concurrency: number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly yieldMs: number;
  private readonly takeOverAfterMs: number;
  /** Resolves when serving is next idle; one wait shared by every drain. */
  private idle: Promise<void> | null = null;
  private readonly sessions = new Map<string, SessionQueue>();
  /** Positions this relay delivered lately: a claim that read one before its removal does not repeat it. */
  private readonly delivered = new Set<string>();
  private readonly drains = new Set<Promise<void>>();
  /**
   * performance.now() at which this relay last gave up each session's lease: a claim that began before then
   * may return the session's entries while another relay has taken it since.
   */
  private readonly releasedAt = new Map<string, number>();
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private unwatch: (() => void) | null = null;
  private ticking: Promise<void> | null = null;
  private tickAgain = false;
  /** A look waits for serving to be idle. */
  private lookWaiting = false;
  /** performance.now() when the last claim began. */
  private lastClaimAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: OutboxRelayOptions) {
    this.outbox = options.outbox;
    this.holder = options.holder ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.leaseMs = options.leaseMs ?? 10_000;
    this.pollMs = options.pollMs ?? 500;
    this.batch = options.batch ?? 256;
    this.concurrency = options.concurrency ?? 32;
    this.initialBackoffMs = options.initialBackoffMs ?? 200;
    this.maxBackoffMs = options.maxBackoffMs ?? 5_000;
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 10_000;
    this.yieldMs = options.servingIdleMs ? (options.yieldMs ?? 10_000) : 0;
    this.takeOverAfterMs = options.takeOverAfterMs ?? 0;
    // Every session waiting out a backoff listens for the stop: as many as `concurrency`.
    setMaxListeners(this.concurrency + 10, this.stopping.signal);
  }

  start(): void {
    if (this.timer || this.stopping.signal.aborted) return;
    this.timer = setInterval(() => this.notify(), this.pollMs);
    this.timer.unref();
    this.unwatch = this.outbox.watch?.(() => this.notify()) ?? null;
    this.look();
  }

  /**
   * Something was just enqueued: look at the outbox now rather than at the next poll. While serving is busy and
   * deliveries yield to it, looks (these and the poll's) are held to one per `yieldMs` or a quarter lease,
   * whichever is shorter, made once serving is idle or that long after the last claim: a claim on every turn
   * answered reads the outbox (on the filesystem, its folder and leases) beside the turns being served, while
   * one per quarter lease renews the leases of the sessions waiting out a hold longer than a lease.
   */
  notify(): void {
    if (this.stopping.signal.aborted) return;
    const lookEveryMs = Math.min(this.yieldMs, this.leaseMs / 4);
    const heldFor = this.servingBusy() ? this.lastClaimAt + lookEveryMs - performance.now() : 0;
    if (heldFor > 0) this.lookOnceServingIdle(heldFor);
    else this.look();
  }

  /** Claims now (or again once the claim in progress ends). */
  private look(): void {
    if (this.ticking) {
      this.tickAgain = true;
      return;
    }
    this.ticking = this.tick().finally(() => {
      this.ticking = null;
    });
  }

  /** Sessions being delivered now (for tests and status). */
  get activeSessions(): number {
    return this.sessions.size;
  }

  /**
   * Stops claiming, lets deliveries in flight finish (waiting at most one attempt's timeout), and gives the
   * leases back.
   */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.unwatch?.();
    const bound = sleep(this.attemptTimeoutMs, undefined, { ref: false });
    await Promise.race([Promise.all([this.ticking, ...this.drains]), bound]);
    await this.outbox.release(this.holder).catch(() => undefined);
  }

  private async tick(): Promise<void> {
    do {
      this.tickAgain = false;
      const claimedAt = performance.now();
      this.lastClaimAt = claimedAt;
      let claim: Claim;
      try {
        // No more sessions than it has room to deliver: a session leased here and left waiting is one no
        // other relay may take.
        claim = await this.outbox.claim(this.holder, this.leaseMs, {
          sessions: Math.max(0, this.concurrency - this.sessions.size),
          entries: this.batch,
          ...(this.takeOverAfterMs > 0 && { writtenBefore: Date.now() - this.takeOverAfterMs }),
        });
      } catch (error) {
        this.options.events?.claimFailed?.(error);
        return;
      }
      if (this.stopping.signal.aborted) return;
      const validUntil = claimedAt + this.leaseMs / 2;
      // Sessions being delivered whose lease this claim renewed may go on; the others stop at their deadline.
      const held = claim.sessions === 'all' ? null : new Set(claim.sessions);
      for (const [sessionId, queue] of this.sessions)
        if (held === null || held.has(sessionId)) queue.validUntil = validUntil;
      for (const [sessionId, at] of this.releasedAt)
        if (at < claimedAt - this.leaseMs) this.releasedAt.delete(sessionId);
      // Entries delivered whose removal failed (the store was down): removed again, not delivered again.
      const leftovers: OutboxEntry[] = [];
      for (const entry of claim.entries) {
        if ((this.releasedAt.get(entry.sessionId) ?? -1) >= claimedAt) continue;
        const position = positionOf(entry);
        if (this.delivered.has(position)) {
          leftovers.push(entry);
          continue;
        }
        let queue = this.sessions.get(entry.sessionId);
        // Its drain is letting go of the lease; it looks again once it has.
        if (queue?.closing) continue;
        if (queue?.seen.has(position)) continue;
        // A queue only with an entry to deliver: an empty one would never be drained, and would hold its place.
        if (!queue) {
          queue = { entries: [], seen: new Set(), validUntil, closing: false, running: false };
          this.sessions.set(entry.sessionId, queue);
        }
        queue.seen.add(position);
        queue.entries.push(entry);
      }
      this.startDrains();
      if (leftovers.length > 0) await this.outbox.remove(leftovers).catch(() => undefined);
    } while (this.tickAgain && !this.stopping.signal.aborted);
  }

  private startDrains(): void {
    for (const [sessionId, queue] of this.sessions) {
      if (this.drains.size >= this.concurrency) return;
      if (queue.running || queue.closing || queue.entries.length === 0) continue;
      queue.running = true;
      const drain = this.drain(sessionId, queue).finally(() => {
        this.drains.delete(drain);
        this.startDrains();
      });
      this.drains.add(drain);
    }
  }

  /** Delivers a session's entries one after another; ends when none is left or its lease is in doubt. */
  private async drain(sessionId: string, queue: SessionQueue): Promise<void> {
    let leaseKept = true;
    for (;;) {
      const entry = queue.entries[0];
      if (entry === undefined) break;
      if (!(await this.deliverUntilDone(entry, queue))) {
        leaseKept = false;
        break;
      }
      queue.entries.shift();
      this.rememberDelivered(positionOf(entry));
      await this.outbox.remove([entry]).catch(() => undefined); // left behind: delivered again, harmlessly
    }
    queue.running = false;
    queue.closing = true;
    if (leaseKept && !this.stopping.signal.aborted) {
      this.releasedAt.set(sessionId, performance.now());
      await this.outbox.release(this.holder, [sessionId]).catch(() => undefined);
    }
    this.sessions.delete(sessionId);
    if (leaseKept) this.look(); // entries that arrived while it was letting go
  }

  private rememberDelivered(position: string): void {
    this.delivered.add(position);
    if (this.delivered.size > 50_000) {
      const oldest = this.delivered.values().next().value;
      if (oldest !== undefined) this.delivered.delete(oldest);
    }
  }

  private servingBusy(): boolean {
    const idleMs = this.options.servingIdleMs;
    return this.yieldMs > 0 && idleMs !== undefined && idleMs() < QUIET_MS;
  }

  /** One look, once serving is idle or `heldFor` ms from now, for every notice that came meanwhile. */
  private lookOnceServingIdle(heldFor: number): void {
    if (this.lookWaiting) return;
    this.lookWaiting = true;
    void this.servingIdleOr(heldFor).then(() => {
      this.lookWaiting = false;
      if (!this.stopping.signal.aborted) this.look();
    });
  }

  /** Waits until serving is idle, or until `entry` is `yieldMs` old. */
  private async yieldToServing(entry: OutboxEntry): Promise<void> {
    const waitMs = entry.createdAt + this.yieldMs - Date.now();
    if (waitMs <= 0 || !this.servingBusy()) return;
    await this.servingIdleOr(waitMs);
  }

  /** Resolves once serving is idle, or after `ms`: one wait for serving, shared by every look and delivery. */
  private servingIdleOr(ms: number): Promise<unknown> {
    const idleMs = this.options.servingIdleMs;
    if (!idleMs) return Promise.resolve();
    this.idle ??= this.untilIdle(idleMs).finally(() => {
      this.idle = null;
    });
    return Promise.race([this.idle, sleep(ms, undefined, { ref: false })]);
  }

  private async untilIdle(idleMs: () => number): Promise<void> {
    for (let idle = idleMs(); idle < QUIET_MS && !this.stopping.signal.aborted; idle = idleMs())
      await sleep(Math.max(IDLE_POLL_MS, QUIET_MS - idle), undefined, { ref: false });
  }

  /** True once delivered; false when the lease may have run out or the relay is stopping. */
  private async deliverUntilDone(entry: OutboxEntry, queue: SessionQueue): Promise<boolean> {
    await this.yieldToServing(entry);
    let backoff = this.initialBackoffMs;
    for (;;) {
      const now = performance.now();
      if (this.stopping.signal.aborted || now >= queue.validUntil) return false;
      const deadline = Date.now() + Math.min(this.attemptTimeoutMs, queue.validUntil - now);
      // The deadline is kept here too, whatever `deliver` does with it: an attempt that hangs counts as failed.
      let timer: NodeJS.Timeout | undefined;
      const overdue = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error('delivery took longer than its deadline')),
          deadline - Date.now(),
        );
      });
      try {
        await Promise.race([this.options.deliver(entry, deadline), overdue]);
        this.options.events?.delivered?.(entry, Date.now() - entry.createdAt);
        return true;
      } catch (error) {
        this.options.events?.deliveryFailed?.(entry, error);
      } finally {
        clearTimeout(timer);
      }
      try {
        await sleep(backoff * (0.5 + Math.random()), undefined, { signal: this.stopping.signal });
      } catch {
        return false; // stopping
      }
      backoff = Math.min(backoff * 2, this.maxBackoffMs);
    }
  }
}

function positionOf(entry: OutboxEntry): string {
  return entry.position ?? entry.id;
}
