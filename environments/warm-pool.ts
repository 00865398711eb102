// Warm pools: per sandbox spec, an env host keeps a few started, unclaimed containers ready, so `acquire`
// claims one instead of creating and starting a container while the rollout waits. This file is the
// bookkeeping (sizes per image, which idle containers are ready, refilling, keeping their short leases alive);
// the Docker side (creating an idle container, the claim by rename + claim file) is in docker-warm-pool.ts.
// See docs/containers.md, "Warm pools".

import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { SandboxSpec } from './sandbox.js';

export const warmPoolSettingsSchema = z
  .object({
    /** Names this host's pool in the containers' `openclaw.pool` label (a random suffix is added per instance). */
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,60}$/, 'letters, digits, ".", "_" or "-" (at most 61)')
      .default('pool'),
    /** Ready containers per image (every spec of that image gets its own pool of this size); 0 = off. */
    sizes: z.record(z.string().min(1), z.number().int().min(0).max(256)).default({}),
    /** Lease of an idle container, renewed every third of it while the pool lives; it ends by itself otherwise. */
    leaseMs: z.number().int().min(5_000).max(3_600_000).default(60_000),
    /** Idle containers created at once per spec while refilling. */
    refillConcurrency: z.number().int().min(1).max(32).default(2),
  })
  .strict();

export type WarmPoolSettings = z.output<typeof warmPoolSettingsSchema>;
export type WarmPoolSettingsInput = z.input<typeof warmPoolSettingsSchema>;

/** Validated settings, with every problem named. */
export function parseWarmPoolSettings(input: unknown): WarmPoolSettings {
  const parsed = warmPoolSettingsSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`,
    );
    throw new Error(`invalid warm pool settings: ${problems.join('; ')}`);
  }
  return parsed.data;
}

/** `image=N[,image=N...]` (the `--warm-pool` flag) as pool sizes per image. */
export function parseWarmPoolSizes(flag: string): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const part of flag
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^(.+)=(\d{1,3})$/.exec(part);
    if (!match?.[1] || match[2] === undefined)
      throw new Error(`--warm-pool takes image=N[,image=N...], got "${part}"`);
    sizes[match[1]] = Number(match[2]);
  }
  return parseWarmPoolSettings({ sizes }).sizes;
}

/** One started, unclaimed container. */
export interface IdleContainer {
  /** Its name while it is idle (the claim renames it, so a renewal by this name cannot touch a claimed one). */
  name: string;
  id: string;
  labels: Record<string, string>;
  /** Its lease's end as last set (epoch ms); one about to end is not handed out. */
  expiresAt: number;
}

/** What the pool needs from the container runtime (DockerSandboxProvider implements it). */
export interface WarmPoolBackend {
  /** Creates and starts an idle container of `spec`, leased for `leaseMs`, labelled with the pool instance. */
  createIdle(spec: SandboxSpec, specKey: string, pool: string, leaseMs: number): Promise<IdleContainer>;
  /** Pushes an idle container's lease forward; false when it is gone (or was claimed meanwhile). */
  renewIdle(container: IdleContainer, leaseMs: number): Promise<boolean>;
  /** Removes an idle container; succeeds when it is gone. */
  removeIdle(container: IdleContainer): Promise<void>;
}

interface SpecPool {
  spec: SandboxSpec;
  size: number;
  ready: IdleContainer[];
  /** Containers being renewed right now: not handed out until the renewal is done. */
  renewing: Set<IdleContainer>;
  creating: number;
  /** Settles when the current refill round ends. */
  filling: Promise<void> | null;
  /** Why the last creation failed, for `prewarm`'s error. */
  lastError?: unknown;
}

export interface WarmPoolCounts {
  /** Acquires served from the pool. */
  claimed: number;
  /** Acquires that found the pool of their spec empty (or off) and created a container. */
  missed: number;
  /** Idle containers created. */
  created: number;
  /** Idle containers found gone at renewal or at claim. */
  lost: number;
}

export class WarmPool {
  /** The `openclaw.pool` label of this instance's containers: the pool's name and a random suffix. */
  readonly instance: string;
  private readonly pools = new Map<string, SpecPool>();
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  private readonly counts: WarmPoolCounts = { claimed: 0, missed: 0, created: 0, lost: 0 };

  constructor(
    private readonly backend: WarmPoolBackend,
    readonly settings: WarmPoolSettings,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {
    this.instance = `${settings.name}-${randomBytes(4).toString('hex')}`;
    this.timer = setInterval(() => void this.renewAll(), Math.max(1_000, settings.leaseMs / 3));
    this.timer.unref();
  }

  /** Ready containers per image for `spec` (0 = no pool). */
  sizeFor(spec: SandboxSpec): number {
    return this.settings.sizes[spec.image] ?? 0;
  }

  /**
   * An idle container of this spec, taken out of the pool (the caller claims it and then calls `refill`), or
   * null when none is ready.
   */
  take(spec: SandboxSpec, specKey: string): IdleContainer | null {
    const pool = this.poolFor(spec, specKey);
    if (pool === null) return null;
    // A container whose lease is about to end (renewals late on a busy host) may stop under its rollout.
    const safeUntil = Date.now() + Math.min(10_000, this.settings.leaseMs / 4);
    for (const stale of pool.ready.filter((c) => c.expiresAt < safeUntil && !pool.renewing.has(c))) {
      pool.ready = pool.ready.filter((c) => c !== stale);
      this.counts.lost += 1;
      void this.backend.removeIdle(stale).catch(this.onError);
    }
    const index = pool.ready.findIndex((c) => !pool.renewing.has(c));
    const taken = index >= 0 ? (pool.ready.splice(index, 1)[0] ?? null) : null;
    if (taken === null) this.counts.missed += 1;
    else this.counts.claimed += 1;
    return taken;
  }

  /** Removes a container `take` handed out whose claim failed (it is not handed out again). */
  discard(container: IdleContainer): void {
    this.counts.claimed -= 1;
    void this.backend.removeIdle(container).catch(this.onError);
  }

  /** Fills the pool of `spec` and resolves once it holds its size (or no pool is configured for it). */
  async prewarm(spec: SandboxSpec, specKey: string): Promise<void> {
    const pool = this.poolFor(spec, specKey);
    while (pool !== null && !this.closed && pool.ready.length < pool.size) {
      const before = this.counts.created;
      pool.lastError = undefined;
      this.refill(specKey);
      await pool.filling;
      if (this.counts.created === before && pool.ready.length < pool.size) {
        throw new Error(`warm pool of ${spec.image} could not be filled: ${String(pool.lastError)}`);
      }
    }
  }

  /** Ready containers of a spec now. */
  readyCount(specKey: string): number {
    return this.pools.get(specKey)?.ready.length ?? 0;
  }

  stats(): WarmPoolCounts {
    return { ...this.counts };
  }

  /** Stops refilling and renewing and removes every idle container. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.all([...this.pools.values()].map((pool) => pool.filling));
    const idle = [...this.pools.values()].flatMap((pool) => pool.ready.splice(0));
    await Promise.all(idle.map((c) => this.backend.removeIdle(c).catch(this.onError)));
  }

  private poolFor(spec: SandboxSpec, specKey: string): SpecPool | null {
    const size = this.sizeFor(spec);
    if (size <= 0 || this.closed) return null;
    let pool = this.pools.get(specKey);
    if (pool === undefined) {
      pool = { spec, size, ready: [], renewing: new Set(), creating: 0, filling: null };
      this.pools.set(specKey, pool);
    }
    return pool;
  }

  /** Starts creating what the pool of a spec lacks, `refillConcurrency` at a time, in the background. */
  refill(specKey: string): void {
    const pool = this.pools.get(specKey);
    if (pool === undefined || this.closed || pool.filling !== null) return;
    const lane = async (): Promise<void> => {
      while (!this.closed && pool.ready.length + pool.creating < pool.size) {
        pool.creating += 1;
        try {
          const container = await this.backend.createIdle(
            pool.spec,
            specKey,
            this.instance,
            this.settings.leaseMs,
          );
          this.counts.created += 1;
          if (this.closed) await this.backend.removeIdle(container);
          else pool.ready.push(container);
        } catch (error) {
          pool.lastError = error;
          this.onError(error);
          return; // the next take or renewal round tries again
        } finally {
          pool.creating -= 1;
        }
      }
    };
    const lanes = Array.from({ length: this.settings.refillConcurrency }, lane);
    pool.filling = Promise.all(lanes).then(() => {
      pool.filling = null;
    });
  }

  /** Renews every idle container's lease, drops the ones that are gone, and tops the pools up. */
  private async renewAll(): Promise<void> {
    for (const [specKey, pool] of this.pools) {
      await Promise.all(
        [...pool.ready].map(async (container) => {
          pool.renewing.add(container);
          try {
            const expiresAt = Date.now() + this.settings.leaseMs;
            if (await this.backend.renewIdle(container, this.settings.leaseMs))
              container.expiresAt = expiresAt;
            else {
              pool.ready = pool.ready.filter((c) => c !== container);
              this.counts.lost += 1;
            }
          } catch (error) {
            this.onError(error);
          } finally {
            pool.renewing.delete(container);
          }
        }),
      );
      this.refill(specKey);
    }
  }
}
