// The Docker side of a warm pool (warm-pool.ts): idle containers are created, renewed and removed by their
// idle name, and `claim` hands one to a rollout by writing the rollout id into it and renaming it to the
// rollout's container name.

import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import type { SandboxOfContainer } from './container-leases.js';
import { inspectContainer, removeContainer } from './docker-containers.js';
import { isDockerConflict, isDockerNotFound, SandboxGoneError } from './docker-errors.js';
import { DockerSandbox, type DockerSandboxLimits } from './docker-sandbox-container.js';
import type { SandboxSpec } from './sandbox.js';
import type { SandboxContainerFactory } from './sandbox-container-factory.js';
import { CLAIM_FILE, encodeLeaseFile, LABELS, LEASE_FILE, LEASE_FILE_OWNER } from './sandbox-lease.js';
import {
  type IdleContainer,
  parseWarmPoolSettings,
  WarmPool,
  type WarmPoolBackend,
  type WarmPoolCounts,
  type WarmPoolSettingsInput,
} from './warm-pool.js';

/** The name of an idle warm-pool container (until a claim renames it to its rollout's). */
function poolContainerName(pool: string, hash: string): string {
  return `openclaw-pool-${pool.toLowerCase().slice(0, 40)}-${hash.slice(0, 8)}-${randomBytes(4).toString('hex')}`;
}

export interface DockerWarmPoolDependencies {
  docker: Docker;
  limits: DockerSandboxLimits;
  containers: SandboxContainerFactory;
  sandboxFor: SandboxOfContainer;
  /** Claimed warm-pool containers: container id → rollout id. */
  claims: Map<string, string>;
}

export class DockerWarmPool {
  private readonly pool: WarmPool;

  constructor(
    private readonly deps: DockerWarmPoolDependencies,
    settings: WarmPoolSettingsInput,
    onError?: (error: unknown) => void,
  ) {
    this.pool = new WarmPool(this.backend(), parseWarmPoolSettings(settings), onError);
  }

  /**
   * Claims a ready warm-pool container for the rollout, or returns null (pool empty, or the rollout's name
   * was taken meanwhile: the caller's loop then finds that container). First the rollout id (claim file) and
   * the rollout's lease go into the idle container in one upload, then the rename to the rollout's name
   * commits the claim: it fails when the rollout's name exists, and whoever finds the container by that name
   * finds its claim file already there.
   */
  async claim(
    spec: SandboxSpec,
    rolloutId: string,
    name: string,
    hash: string,
    expiresAt: number,
  ): Promise<DockerSandbox | null> {
    for (;;) {
      const idle = this.pool.take(spec, hash);
      if (idle === null) {
        this.pool.refill(hash);
        return null;
      }
      const sandbox = this.deps.sandboxFor(idle.id, rolloutId, idle.labels);
      try {
        await sandbox.writeOwnedFiles(
          [
            { path: CLAIM_FILE, content: `${rolloutId}\n` },
            { path: LEASE_FILE, content: encodeLeaseFile(expiresAt) },
          ],
          LEASE_FILE_OWNER,
        );
        await this.deps.docker.getContainer(idle.id).rename({ name });
      } catch (error) {
        // Gone meanwhile (its pool lease ran out): the next one. The name taken: a concurrent acquire of this
        // rollout won; this container carries a claim now, so it is not handed out again.
        const gone = error instanceof SandboxGoneError || isDockerNotFound(error);
        if (!gone && !isDockerConflict(error)) throw error;
        this.pool.discard(idle);
        if (gone) continue;
        return null;
      }
      this.deps.claims.set(idle.id, rolloutId);
      // Refilled only now, so creating the replacement does not slow the claim down.
      this.pool.refill(hash);
      return sandbox;
    }
  }

  /** Fills the pool of `spec` now (it otherwise fills on the spec's first acquire). */
  async prewarm(spec: SandboxSpec, hash: string): Promise<void> {
    await this.pool.prewarm(spec, hash);
  }

  /** How often acquires were served warm or cold, and the pool's own churn. */
  stats(): WarmPoolCounts & { instance: string } {
    return { ...this.pool.stats(), instance: this.pool.instance };
  }

  /** Stops the pool, removing its idle containers (claimed ones stay with their rollouts). */
  async close(): Promise<void> {
    await this.pool.close();
  }

  private backend(): WarmPoolBackend {
    const { docker, limits, containers } = this.deps;
    return {
      createIdle: async (spec, specKey, pool, leaseMs) => {
        const name = poolContainerName(pool, specKey);
        const expiresAt = Date.now() + leaseMs;
        const { id, labels } = await containers.createStarted(
          spec,
          { [LABELS.pool]: pool },
          name,
          specKey,
          expiresAt,
        );
        return { name, id, labels, expiresAt };
      },
      renewIdle: async (idle: IdleContainer, leaseMs) => {
        const byName = new DockerSandbox(docker, idle.name, '', '', limits);
        try {
          await byName.writeOwnedFile(LEASE_FILE, encodeLeaseFile(Date.now() + leaseMs), LEASE_FILE_OWNER);
          return true;
        } catch (error) {
          if (error instanceof SandboxGoneError) return false;
          throw error;
        }
      },
      removeIdle: async (idle: IdleContainer) => {
        // By its idle name: a container claimed meanwhile is not touched.
        const info = await inspectContainer(docker, idle.name);
        if (info !== null && info.Id === idle.id) await removeContainer(docker, info.Id);
      },
    };
  }
}
