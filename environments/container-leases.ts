// Whose a sandbox container is and until when: the owner is its rollout-id label, or for a claimed warm-pool
// container the claim file (cached once read: a claim never changes); the lease ends at the later of the
// label's expiry and the renewal file's (sandbox-lease.ts). `reapExpired` removes the containers whose lease
// has ended.

import type Docker from 'dockerode';
import { removeContainer } from './docker-containers.js';
import { isDockerNotFound, SandboxFileNotFoundError, SandboxGoneError } from './docker-errors.js';
import type { DockerSandbox } from './docker-sandbox-container.js';
import { CLAIM_FILE, decodeLeaseFile, effectiveExpiry, LABELS, LEASE_FILE } from './sandbox-lease.js';

/** A sandbox over an existing container, to read its files or run in it. */
export type SandboxOfContainer = (
  containerId: string,
  rolloutId: string,
  labels: Record<string, string>,
) => DockerSandbox;

export class ContainerLeases {
  constructor(
    private readonly docker: Docker,
    private readonly sandboxFor: SandboxOfContainer,
    /** Claimed warm-pool containers: container id → rollout id. */
    private readonly claims: Map<string, string>,
    /** Label filters of the containers `reapExpired` sees (managed, of this provider's scope). */
    private readonly managedFilter: string[],
  ) {}

  /**
   * The rollout a container belongs to: its label, or for a warm-pool container the claim file (null while
   * unclaimed). Throws `SandboxGoneError` when the container vanished while its file was read.
   */
  async ownerOf(info: Docker.ContainerInspectInfo): Promise<string | null> {
    const labels = info.Config.Labels;
    if (labels[LABELS.pool] === undefined) return labels[LABELS.rolloutId] ?? null;
    const cached = this.claims.get(info.Id);
    if (cached !== undefined) return cached;
    try {
      const owner = (await this.sandboxFor(info.Id, '', labels).readFile(CLAIM_FILE)).toString('utf8').trim();
      if (owner === '') return null;
      this.claims.set(info.Id, owner);
      return owner;
    } catch (error) {
      if (error instanceof SandboxFileNotFoundError) return null;
      throw error;
    }
  }

  /** Whether the container is the rollout's (false when it vanished meanwhile). */
  async isOwnedBy(info: Docker.ContainerInspectInfo, rolloutId: string): Promise<boolean> {
    try {
      return (await this.ownerOf(info)) === rolloutId;
    } catch (error) {
      if (error instanceof SandboxGoneError) return false;
      throw error;
    }
  }

  /**
   * The lease's end: the label's expiry, or the renewal file's when later. The file is read only when the
   * label alone says the lease ended by `now` (renewals only extend it). Throws `SandboxGoneError`.
   */
  async expiryOf(containerId: string, labels: Record<string, string>, now: number): Promise<number> {
    const fromLabel = effectiveExpiry(labels[LABELS.leaseExpiresAt], null);
    if (fromLabel > now) return fromLabel;
    const sandbox = this.sandboxFor(containerId, labels[LABELS.rolloutId] ?? '', labels);
    let fromFile: number | null = null;
    try {
      fromFile = decodeLeaseFile((await sandbox.readFile(LEASE_FILE)).toString('utf8'));
    } catch (error) {
      if (!(error instanceof SandboxFileNotFoundError)) throw error; // never renewed: the label decides
    }
    return effectiveExpiry(labels[LABELS.leaseExpiresAt], fromFile);
  }

  /** Removes a container (its claim with it). */
  async remove(containerId: string): Promise<void> {
    await removeContainer(this.docker, containerId);
    this.claims.delete(containerId);
  }

  /** Removes every managed container whose lease ended by `now`; returns their ids. */
  async reapExpired(now: number): Promise<string[]> {
    const containers = await this.docker.listContainers({
      all: true,
      filters: { label: this.managedFilter },
    });
    const reaped: string[] = [];
    const failures: unknown[] = [];
    for (const summary of containers) {
      try {
        if ((await this.expiryOf(summary.Id, summary.Labels, now)) > now) continue;
        await this.remove(summary.Id);
        reaped.push(summary.Id);
      } catch (error) {
        // Gone meanwhile is fine; anything else must not stop the other containers from being reaped.
        if (!(error instanceof SandboxGoneError) && !isDockerNotFound(error)) failures.push(error);
      }
    }
    if (failures.length > 0) {
      throw new AggregateError(
        failures,
        `reaped ${reaped.length} sandboxes; ${failures.length} could not be checked or removed`,
      );
    }
    return reaped;
  }
}
