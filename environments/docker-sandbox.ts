// Sandboxes as Docker containers on one env host (dockerode over the local Engine API). Every container is
// locked down and has a disk quota (sandbox-container-factory.ts, container-disk-quota.ts), is named after its
// rollout so `acquire` is idempotent, and is leased: it disappears on its own once the lease ends
// (sandbox-lease.ts), and `reapExpired` removes what is left (container-leases.ts). With a warm pool
// (docker-warm-pool.ts), `acquire` claims a started idle container of the same spec instead of creating one.
// See docs/containers.md.

import Docker from 'dockerode';
import { fnv1a64Hex } from '../core/fnv1a64.js';
import { ContainerDiskQuota, type DiskQuotaMode } from './container-disk-quota.js';
import { ContainerLeases } from './container-leases.js';
import { inspectContainer } from './docker-containers.js';
import { isDockerConflict, isDockerNotFound, SandboxGoneError } from './docker-errors.js';
import { DockerSandbox, type DockerSandboxLimits } from './docker-sandbox-container.js';
import { DockerWarmPool } from './docker-warm-pool.js';
import type { Sandbox, SandboxLease, SandboxProvider, SandboxSpec } from './sandbox.js';
import { SandboxContainerFactory } from './sandbox-container-factory.js';
import { encodeLeaseFile, LABELS, LEASE_FILE, LEASE_FILE_OWNER } from './sandbox-lease.js';
import type { WarmPoolCounts, WarmPoolSettingsInput } from './warm-pool.js';

export { DockerSandbox } from './docker-sandbox-container.js';

export interface DockerSandboxProviderOptions {
  /** The Engine API client; by default the local socket (or DOCKER_HOST). */
  docker?: Docker;
  /** Kept per output stream of one exec; default 1 MiB. */
  maxOutputBytes?: number;
  /** Largest file `readFile` returns; default 64 MiB. */
  maxReadBytes?: number;
  /** Host-side slack past an exec's own timeout; default 5 s. */
  execGraceMs?: number;
  /** Largest file a sandbox process may write (RLIMIT_FSIZE); default 1 GiB. */
  maxFileBytes?: number;
  /** How often the in-container keeper checks its lease; default 2 s. */
  keeperIntervalSeconds?: number;
  /** Started containers kept ready per image (`sizes`; default none: every acquire creates one). */
  warmPool?: WarmPoolSettingsInput;
  /** Told when refilling or renewing the warm pool failed (it tries again later). */
  onWarmPoolError?: (error: unknown) => void;
  /** Bytes a container may write (its writable layer); default 10 GiB, 0 for none. */
  diskQuotaBytes?: number;
  /** How often the watcher checks the containers' disk use where the driver has no quota; default 10 s. */
  diskCheckIntervalMs?: number;
  /** Pull an image that is not on the host before giving up on it (where a registry is reachable); default true. */
  pullMissingImages?: boolean;
  /** An OCI runtime registered with the Docker daemon, e.g. `runsc` for gVisor; default the daemon's (runc). */
  runtime?: string;
  /**
   * Containers it makes carry this scope, and its reaper and disk watcher see only containers of the same
   * scope: several deployments (or test runs) on one Docker engine then leave each other's containers alone.
   * Default none: every managed container on the engine.
   */
  scope?: string;
}

/** The container name of a rollout: readable, Docker-safe and unique (a hash of the full id). */
export function sandboxContainerName(rolloutId: string): string {
  const slug = rolloutId
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, '-')
    .slice(0, 40);
  return `openclaw-sandbox-${slug}-${fnv1a64Hex(rolloutId).slice(0, 12)}`;
}

/** A stable hash of what a container was created from, so a changed spec is not silently reused. */
export function specHash(spec: SandboxSpec): string {
  const env = Object.entries(spec.env ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return fnv1a64Hex(
    JSON.stringify([
      spec.image,
      spec.limits.memoryBytes,
      spec.limits.cpus,
      spec.limits.pids,
      spec.network,
      spec.user ?? null,
      spec.runAs ?? 'image',
      spec.workdir ?? null,
      env,
    ]),
  );
}

export class DockerSandboxProvider implements SandboxProvider {
  private readonly docker: Docker;
  private readonly limits: DockerSandboxLimits;
  private readonly containers: SandboxContainerFactory;
  private readonly diskQuota: ContainerDiskQuota;
  private readonly leases: ContainerLeases;
  private readonly pool: DockerWarmPool | null;

  constructor(options: DockerSandboxProviderOptions = {}) {
    this.docker = options.docker ?? new Docker();
    this.limits = {
      maxOutputBytes: options.maxOutputBytes ?? 1024 * 1024,
      maxReadBytes: options.maxReadBytes ?? 64 * 1024 * 1024,
      execGraceMs: options.execGraceMs ?? 5_000,
    };
    const managedFilter = [
      `${LABELS.managed}=true`,
      ...(options.scope === undefined ? [] : [`${LABELS.scope}=${options.scope}`]),
    ];
    // Claimed warm-pool containers: container id → rollout id (a claim never changes, so it can be cached).
    const claims = new Map<string, string>();
    const sandboxFor = this.sandboxFor.bind(this);
    this.diskQuota = new ContainerDiskQuota(
      this.docker,
      {
        quotaBytes: options.diskQuotaBytes ?? 10 * 1024 ** 3,
        checkIntervalMs: options.diskCheckIntervalMs ?? 10_000,
        managedFilter,
      },
      claims,
    );
    this.containers = new SandboxContainerFactory(
      this.docker,
      {
        limits: this.limits,
        maxFileBytes: options.maxFileBytes ?? 1024 * 1024 * 1024,
        keeperIntervalSeconds: options.keeperIntervalSeconds ?? 2,
        pullMissingImages: options.pullMissingImages ?? true,
        runtime: options.runtime,
        scope: options.scope,
      },
      this.diskQuota,
    );
    this.leases = new ContainerLeases(this.docker, sandboxFor, claims, managedFilter);
    this.pool = options.warmPool
      ? new DockerWarmPool(
          { docker: this.docker, limits: this.limits, containers: this.containers, sandboxFor, claims },
          options.warmPool,
          options.onWarmPoolError,
        )
      : null;
  }

  async acquire(
    spec: SandboxSpec,
    rolloutId: string,
    leaseMs: number,
  ): Promise<{ sandbox: Sandbox; lease: SandboxLease }> {
    this.diskQuota.checkRollout(rolloutId);
    const name = sandboxContainerName(rolloutId);
    const hash = specHash(spec);
    // A concurrent acquire of the same rollout (a timed-out attempt still running) may win the name: then
    // this one waits for that container to start and shares it.
    for (let attempt = 0; ; attempt += 1) {
      const expiresAt = Date.now() + leaseMs;
      const existing = await this.settledContainer(name);
      if (existing !== null) {
        if (await this.isReusable(existing, rolloutId, hash)) {
          const sandbox = this.sandboxFor(existing.Id, rolloutId, existing.Config.Labels);
          await sandbox.writeOwnedFile(LEASE_FILE, encodeLeaseFile(expiresAt), LEASE_FILE_OWNER);
          return { sandbox, lease: { sandboxId: existing.Id, rolloutId, expiresAt } };
        }
        await this.leases.remove(existing.Id);
      } else if (this.pool !== null) {
        const claimed = await this.pool.claim(spec, rolloutId, name, hash, expiresAt);
        if (claimed !== null)
          return { sandbox: claimed, lease: { sandboxId: claimed.id, rolloutId, expiresAt } };
      }
      try {
        const { id, labels } = await this.containers.createStarted(
          spec,
          { [LABELS.rolloutId]: rolloutId },
          name,
          hash,
          expiresAt,
        );
        return {
          sandbox: this.sandboxFor(id, rolloutId, labels),
          lease: { sandboxId: id, rolloutId, expiresAt },
        };
      } catch (error) {
        if (attempt >= 4 || !(isDockerConflict(error) || isDockerNotFound(error))) throw error;
        // The Engine reserves a name before the container can be inspected: wait until the winner's shows.
        if (isDockerConflict(error)) await this.untilNamed(name);
        await new Promise((resolve) => setTimeout(resolve, 100 * (attempt + 1)));
      }
    }
  }

  /** Waits (up to 10 s) until a container of this name can be inspected. */
  private async untilNamed(name: string): Promise<void> {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      if ((await inspectContainer(this.docker, name)) !== null) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The named container once it is past creation (another acquire may be starting it), or null. */
  private async settledContainer(name: string): Promise<Docker.ContainerInspectInfo | null> {
    for (let attempt = 0; ; attempt += 1) {
      const info = await inspectContainer(this.docker, name);
      if (info === null || info.State.Status !== 'created' || attempt >= 100) return info;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** A running container of this rollout, made from the same spec, whose lease has not ended. */
  private async isReusable(
    info: Docker.ContainerInspectInfo,
    rolloutId: string,
    hash: string,
  ): Promise<boolean> {
    const labels = info.Config.Labels;
    if (!info.State.Running || labels[LABELS.specHash] !== hash) return false;
    try {
      if ((await this.leases.ownerOf(info)) !== rolloutId) return false;
      return (await this.leases.expiryOf(info.Id, labels, Date.now())) > Date.now();
    } catch (error) {
      if (error instanceof SandboxGoneError) return false;
      throw error;
    }
  }

  /** Removes every managed container over the disk quota; returns the rollout ids it removed. */
  enforceDiskQuota(): Promise<string[]> {
    return this.diskQuota.enforce();
  }

  /** Whether containers get the storage driver's quota (null until the first container was made). */
  diskQuotaMode(): DiskQuotaMode | null {
    return this.diskQuota.mode();
  }

  /** Fills the warm pool of `spec` now (it otherwise fills on the spec's first acquire); no-op without one. */
  async prewarm(spec: SandboxSpec): Promise<void> {
    await this.pool?.prewarm(spec, specHash(spec));
  }

  /** How often acquires were served warm or cold, and the pool's own churn; null without a pool. */
  warmPoolStats(): (WarmPoolCounts & { instance: string }) | null {
    return this.pool ? this.pool.stats() : null;
  }

  /** Stops the warm pool (removing its idle containers; claimed ones stay with their rollouts) and the watcher. */
  async close(): Promise<void> {
    this.diskQuota.close();
    await this.pool?.close();
  }

  async attach(rolloutId: string): Promise<Sandbox | null> {
    const info = await inspectContainer(this.docker, sandboxContainerName(rolloutId));
    if (info === null || !info.State.Running || !(await this.leases.isOwnedBy(info, rolloutId))) return null;
    const now = Date.now();
    try {
      if ((await this.leases.expiryOf(info.Id, info.Config.Labels, now)) <= now) return null;
    } catch (error) {
      if (error instanceof SandboxGoneError) return null;
      throw error;
    }
    return this.sandboxFor(info.Id, rolloutId, info.Config.Labels);
  }

  async renew(rolloutId: string, leaseMs: number): Promise<void> {
    const info = await inspectContainer(this.docker, sandboxContainerName(rolloutId));
    if (info === null || !info.State.Running || !(await this.leases.isOwnedBy(info, rolloutId))) {
      throw new SandboxGoneError(rolloutId);
    }
    const sandbox = this.sandboxFor(info.Id, rolloutId, info.Config.Labels);
    await sandbox.writeOwnedFile(LEASE_FILE, encodeLeaseFile(Date.now() + leaseMs), LEASE_FILE_OWNER);
  }

  async release(rolloutId: string): Promise<void> {
    const info = await inspectContainer(this.docker, sandboxContainerName(rolloutId));
    if (info === null || !(await this.leases.isOwnedBy(info, rolloutId))) return;
    await this.leases.remove(info.Id);
  }

  reapExpired(now: number = Date.now()): Promise<string[]> {
    return this.leases.reapExpired(now);
  }

  private sandboxFor(containerId: string, rolloutId: string, labels: Record<string, string>): DockerSandbox {
    return new DockerSandbox(this.docker, containerId, rolloutId, labels[LABELS.execUser] ?? '', this.limits);
  }
}
