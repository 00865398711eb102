// The disk quota of sandbox containers (their writable layer): the storage driver's own (`--storage-opt
// size`) where it has one (overlay2 on xfs with pquota, btrfs, zfs), else a watcher that removes a container
// whose writable layer outgrows it. A rollout whose container was removed for its disk use is not given
// another one.

import type Docker from 'dockerode';
import { removeContainer } from './docker-containers.js';
import { dockerStatusCode, SandboxDiskQuotaError } from './docker-errors.js';
import { LABELS } from './sandbox-lease.js';

export interface ContainerDiskQuotaSettings {
  /** Bytes a container may write; 0 for none. */
  quotaBytes: number;
  /** How often the watcher checks the containers' disk use where the driver has no quota. */
  checkIntervalMs: number;
  /** Label filters of the containers the watcher polices (managed, of this provider's scope). */
  managedFilter: string[];
}

export type DiskQuotaMode = 'storage-driver' | 'watcher' | 'none';

export class ContainerDiskQuota {
  /** Whether the storage driver takes `--storage-opt size` (learnt from the first container). */
  private storageQuota: boolean | null = null;
  private watch: NodeJS.Timeout | null = null;
  /** Rollouts whose container was removed for its disk use: they are not given another one. */
  private readonly overQuota = new Map<string, number>();

  constructor(
    private readonly docker: Docker,
    private readonly settings: ContainerDiskQuotaSettings,
    /** Claimed warm-pool containers (container id → rollout id), whose labels name no rollout. */
    private readonly claims: Map<string, string>,
  ) {}

  /** Throws `SandboxDiskQuotaError` for a rollout whose container was removed for its disk use. */
  checkRollout(rolloutId: string): void {
    const used = this.overQuota.get(rolloutId);
    if (used !== undefined) throw new SandboxDiskQuotaError(rolloutId, used, this.settings.quotaBytes);
  }

  /**
   * Creates the container with the storage driver's disk quota where the driver has one; without, once, and
   * from then on the watcher enforces the quota.
   */
  async create(options: Docker.ContainerCreateOptions): Promise<Docker.Container> {
    if (this.settings.quotaBytes <= 0) return this.docker.createContainer(options);
    if (this.storageQuota !== false) {
      try {
        const container = await this.docker.createContainer({
          ...options,
          HostConfig: { ...options.HostConfig, StorageOpt: { size: String(this.settings.quotaBytes) } },
        });
        this.storageQuota = true;
        return container;
      } catch (error) {
        const message = (error as Error).message ?? '';
        if (dockerStatusCode(error) !== 500 || !/storage-?opt|quota|not supported/i.test(message))
          throw error;
        this.storageQuota = false;
      }
    }
    this.startWatch();
    return this.docker.createContainer(options);
  }

  /** Every few seconds, removes containers whose writable layer is over the quota (drivers without one). */
  private startWatch(): void {
    if (this.watch !== null) return;
    let running = false;
    this.watch = setInterval(() => {
      if (running) return;
      running = true;
      this.enforce()
        .catch(() => undefined) // the next round tries again
        .finally(() => {
          running = false;
        });
    }, this.settings.checkIntervalMs);
    this.watch.unref();
  }

  /** Removes every managed container over the disk quota; returns the rollout ids it removed. */
  async enforce(): Promise<string[]> {
    if (this.settings.quotaBytes <= 0) return [];
    const containers = await this.docker.listContainers({
      all: true,
      size: true,
      filters: { label: this.settings.managedFilter },
    });
    const removed: string[] = [];
    for (const summary of containers) {
      const used = (summary as { SizeRw?: number }).SizeRw ?? 0;
      if (used <= this.settings.quotaBytes) continue;
      const rolloutId = summary.Labels[LABELS.rolloutId] ?? this.claims.get(summary.Id) ?? null;
      if (rolloutId !== null) this.overQuota.set(rolloutId, used);
      await removeContainer(this.docker, summary.Id);
      this.claims.delete(summary.Id);
      removed.push(rolloutId ?? summary.Id);
    }
    return removed;
  }

  /** Whether containers get the storage driver's quota (null until the first container was made). */
  mode(): DiskQuotaMode | null {
    if (this.settings.quotaBytes <= 0) return 'none';
    return this.storageQuota === null ? null : this.storageQuota ? 'storage-driver' : 'watcher';
  }

  /** Stops the watcher. */
  close(): void {
    if (this.watch !== null) clearInterval(this.watch);
    this.watch = null;
  }
}
