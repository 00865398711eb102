// Sandboxes as Docker containers on one env host (dockerode over the local Engine API). Every container is
// locked down (no network unless the spec asks, all capabilities dropped, no-new-privileges, memory without
// swap, CPU quota, pids limit, file-size limit), named after its rollout so `acquire` is idempotent, and
// leased: it disappears on its own once the lease ends (sandbox-lease.ts), and `reapExpired` removes what is
// left. Commands run as a non-root user where the spec asks and the image allows (`runAs: 'non-root'`), and
// each container has a disk quota: the storage driver's own (`--storage-opt size`) where it has one (overlay2
// on xfs with pquota, btrfs, zfs), else a watcher that removes a container whose writable layer outgrows it.
// With a warm pool (warm-pool.ts), `acquire` claims a started idle container of the same spec instead
// of creating one: it renames it to the rollout's name and writes the rollout id into it. See
// docs/containers.md.

import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { fnv1a64Hex } from '../core/fnv1a64.js';
import {
  dockerStatusCode,
  isDockerConflict,
  isDockerNotFound,
  isTransientStartFailure,
  SandboxDiskQuotaError,
  SandboxFileNotFoundError,
  SandboxGoneError,
  SandboxImageMissingError,
} from './docker-errors.js';
import { DockerSandbox, type DockerSandboxLimits } from './docker-sandbox-container.js';
import type { Sandbox, SandboxLease, SandboxProvider, SandboxSpec } from './sandbox.js';
import {
  CLAIM_FILE,
  decodeLeaseFile,
  effectiveExpiry,
  encodeLeaseFile,
  LABELS,
  LEASE_FILE,
  leaseKeeperCommand,
} from './sandbox-lease.js';
import {
  type IdleContainer,
  parseWarmPoolSettings,
  WarmPool,
  type WarmPoolBackend,
  type WarmPoolCounts,
  type WarmPoolSettingsInput,
} from './warm-pool.js';

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

/** The user commands run as where the image's own is root (`runAs: 'non-root'`). */
export const NON_ROOT_USER = '1000:1000';
/** Its home, made at the hand-over. */
const NON_ROOT_HOME = '/home/sandbox';
/** Root may change ownership and write anywhere to hand the working directory over; the sandbox user cannot. */
const HAND_OVER_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER'];

function isRootUser(user: string): boolean {
  const name = user.split(':')[0] ?? '';
  return name === '' || name === 'root' || name === '0';
}

const ROOT_READABLE = { uid: 0, gid: 0, mode: 0o644 } as const;
/** Tries at a container whose start fails transiently (see isTransientStartFailure). */
const START_ATTEMPTS = 3;

/** The container name of a rollout: readable, Docker-safe and unique (a hash of the full id). */
export function sandboxContainerName(rolloutId: string): string {
  const slug = rolloutId
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, '-')
    .slice(0, 40);
  return `openclaw-sandbox-${slug}-${fnv1a64Hex(rolloutId).slice(0, 12)}`;
}

/** The name of an idle warm-pool container (until a claim renames it to its rollout's). */
function poolContainerName(pool: string, hash: string): string {
  return `openclaw-pool-${pool.toLowerCase().slice(0, 40)}-${hash.slice(0, 8)}-${randomBytes(4).toString('hex')}`;
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
  private readonly maxFileBytes: number;
  private readonly keeperIntervalSeconds: number;
  private readonly pool: WarmPool | null;
  /** Claimed warm-pool containers: container id → rollout id (a claim never changes, so it can be cached). */
  private readonly claims = new Map<string, string>();
  private readonly diskQuotaBytes: number;
  private readonly diskCheckIntervalMs: number;
  private readonly pullMissingImages: boolean;
  private readonly runtime: string | undefined;
  private readonly managedFilter: string[];
  private readonly scope: string | undefined;
  /** Whether the storage driver takes `--storage-opt size` (learnt from the first container). */
  private storageQuota: boolean | null = null;
  private quotaWatch: NodeJS.Timeout | null = null;
  /** Rollouts whose container was removed for its disk use: they are not given another one. */
  private readonly overQuota = new Map<string, number>();

  constructor(options: DockerSandboxProviderOptions = {}) {
    this.docker = options.docker ?? new Docker();
    this.limits = {
      maxOutputBytes: options.maxOutputBytes ?? 1024 * 1024,
      maxReadBytes: options.maxReadBytes ?? 64 * 1024 * 1024,
      execGraceMs: options.execGraceMs ?? 5_000,
    };
    this.maxFileBytes = options.maxFileBytes ?? 1024 * 1024 * 1024;
    this.keeperIntervalSeconds = options.keeperIntervalSeconds ?? 2;
    this.pool = options.warmPool
      ? new WarmPool(this.warmPoolBackend(), parseWarmPoolSettings(options.warmPool), options.onWarmPoolError)
      : null;
    this.diskQuotaBytes = options.diskQuotaBytes ?? 10 * 1024 ** 3;
    this.diskCheckIntervalMs = options.diskCheckIntervalMs ?? 10_000;
    this.pullMissingImages = options.pullMissingImages ?? true;
    this.runtime = options.runtime;
    this.scope = options.scope;
    this.managedFilter = [
      `${LABELS.managed}=true`,
      ...(options.scope === undefined ? [] : [`${LABELS.scope}=${options.scope}`]),
    ];
  }

  async acquire(
    spec: SandboxSpec,
    rolloutId: string,
    leaseMs: number,
  ): Promise<{ sandbox: Sandbox; lease: SandboxLease }> {
    const used = this.overQuota.get(rolloutId);
    if (used !== undefined) throw new SandboxDiskQuotaError(rolloutId, used, this.diskQuotaBytes);
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
          await sandbox.writeOwnedFile(LEASE_FILE, encodeLeaseFile(expiresAt), ROOT_READABLE);
          return { sandbox, lease: { sandboxId: existing.Id, rolloutId, expiresAt } };
        }
        await this.removeContainer(existing.Id);
      } else if (this.pool !== null) {
        const claimed = await this.claimIdle(spec, rolloutId, name, hash, expiresAt);
        if (claimed !== null)
          return { sandbox: claimed, lease: { sandboxId: claimed.id, rolloutId, expiresAt } };
      }
      try {
        const sandbox = await this.create(spec, rolloutId, name, hash, expiresAt);
        return { sandbox, lease: { sandboxId: sandbox.id, rolloutId, expiresAt } };
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
      if ((await this.inspectByName(name)) !== null) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The named container once it is past creation (another acquire may be starting it), or null. */
  private async settledContainer(name: string): Promise<Docker.ContainerInspectInfo | null> {
    for (let attempt = 0; ; attempt += 1) {
      const info = await this.inspectByName(name);
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
      if ((await this.ownerOf(info)) !== rolloutId) return false;
      return (await this.expiryOf(info.Id, labels, Date.now())) > Date.now();
    } catch (error) {
      if (error instanceof SandboxGoneError) return false;
      throw error;
    }
  }

  private async create(
    spec: SandboxSpec,
    rolloutId: string,
    name: string,
    hash: string,
    expiresAt: number,
  ): Promise<DockerSandbox> {
    const { id, labels } = await this.createStarted(
      spec,
      { [LABELS.rolloutId]: rolloutId },
      name,
      hash,
      expiresAt,
    );
    return this.sandboxFor(id, rolloutId, labels);
  }

  /** Creates and starts a locked-down, leased container; `owner` is its rollout-id or pool label. */
  private async createStarted(
    spec: SandboxSpec,
    owner: Record<string, string>,
    name: string,
    hash: string,
    expiresAt: number,
  ): Promise<{ id: string; labels: Record<string, string> }> {
    const image = await this.imageConfig(spec.image);
    let execUser = spec.user ?? image.user;
    let handOver: string | null = null;
    if (spec.user === undefined && spec.runAs === 'non-root' && isRootUser(image.user)) {
      const workdir = spec.workdir ?? image.workingDir;
      if (workdir !== '' && workdir !== '/') {
        execUser = NON_ROOT_USER;
        handOver = workdir;
      }
    }
    const labels = {
      [LABELS.managed]: 'true',
      ...(this.scope !== undefined && { [LABELS.scope]: this.scope }),
      ...owner,
      [LABELS.leaseExpiresAt]: String(expiresAt),
      [LABELS.specHash]: hash,
      [LABELS.execUser]: execUser,
    };
    const env = Object.entries(spec.env ?? {}).map(([key, value]) => `${key}=${value}`);
    if (handOver !== null && spec.env?.HOME === undefined) env.push(`HOME=${NON_ROOT_HOME}`);
    const options = (quota: boolean): Docker.ContainerCreateOptions => ({
      name,
      Image: spec.image,
      // The keeper runs as root (without capabilities but those of a hand-over) so the sandbox user's code
      // cannot kill it; commands run as `execUser`.
      User: '0:0',
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: leaseKeeperCommand(expiresAt, this.keeperIntervalSeconds),
      ...(spec.workdir !== undefined ? { WorkingDir: spec.workdir } : {}),
      Env: env,
      Labels: labels,
      HostConfig: {
        Init: true,
        AutoRemove: true,
        NetworkMode: spec.network ? 'bridge' : 'none',
        Memory: spec.limits.memoryBytes,
        MemorySwap: spec.limits.memoryBytes, // equal to Memory: no swap
        NanoCpus: Math.round(spec.limits.cpus * 1e9),
        PidsLimit: spec.limits.pids,
        CapDrop: ['ALL'],
        // Only root holds these, and only the host's own commands run as root once the user is non-root.
        ...(handOver !== null && { CapAdd: HAND_OVER_CAPABILITIES }),
        SecurityOpt: ['no-new-privileges'],
        Ulimits: [{ Name: 'fsize', Soft: this.maxFileBytes, Hard: this.maxFileBytes }],
        ...(quota && { StorageOpt: { size: String(this.diskQuotaBytes) } }),
        ...(this.runtime !== undefined && { Runtime: this.runtime }),
      },
    });
    for (let attempt = 1; ; attempt += 1) {
      const container = await this.createWithQuota(options);
      try {
        await container.start();
        if (handOver !== null) await this.handOver(container.id, handOver);
        return { id: container.id, labels };
      } catch (error) {
        // AutoRemove may already have removed it; either way the name is free again once this returns.
        await this.removeContainer(container.id);
        if (attempt >= START_ATTEMPTS || !isTransientStartFailure(error)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
      }
    }
  }

  /**
   * Creates the container with the storage driver's disk quota where the driver has one; without, once, and
   * from then on the watcher enforces the quota.
   */
  private async createWithQuota(
    options: (quota: boolean) => Docker.ContainerCreateOptions,
  ): Promise<Docker.Container> {
    if (this.diskQuotaBytes <= 0) return this.docker.createContainer(options(false));
    if (this.storageQuota !== false) {
      try {
        const container = await this.docker.createContainer(options(true));
        this.storageQuota = true;
        return container;
      } catch (error) {
        const message = (error as Error).message ?? '';
        if (dockerStatusCode(error) !== 500 || !/storage-?opt|quota|not supported/i.test(message))
          throw error;
        this.storageQuota = false;
      }
    }
    this.watchDiskQuota();
    return this.docker.createContainer(options(false));
  }

  /** Gives the working directory (and a home) to the sandbox user, as root, before the policy runs. */
  private async handOver(containerId: string, workdir: string): Promise<void> {
    const root = new DockerSandbox(this.docker, containerId, '', '0:0', this.limits);
    const result = await root.exec(
      [
        'sh',
        '-c',
        'mkdir -p "$1" "$2" && chown -R "$3" "$1" "$2"',
        'sh',
        workdir,
        NON_ROOT_HOME,
        NON_ROOT_USER,
      ],
      { timeoutMs: 120_000 },
    );
    if (result.exitCode !== 0)
      throw new Error(
        `handing ${workdir} over to ${NON_ROOT_USER} failed: ${result.stderr || result.stdout}`,
      );
  }

  /** Every few seconds, removes containers whose writable layer is over the quota (drivers without one). */
  private watchDiskQuota(): void {
    if (this.quotaWatch !== null) return;
    let running = false;
    this.quotaWatch = setInterval(() => {
      if (running) return;
      running = true;
      this.enforceDiskQuota()
        .catch(() => undefined) // the next round tries again
        .finally(() => {
          running = false;
        });
    }, this.diskCheckIntervalMs);
    this.quotaWatch.unref();
  }

  /** Removes every managed container over the disk quota; returns the rollout ids it removed. */
  async enforceDiskQuota(): Promise<string[]> {
    if (this.diskQuotaBytes <= 0) return [];
    const containers = await this.docker.listContainers({
      all: true,
      size: true,
      filters: { label: this.managedFilter },
    });
    const removed: string[] = [];
    for (const summary of containers) {
      const used = (summary as { SizeRw?: number }).SizeRw ?? 0;
      if (used <= this.diskQuotaBytes) continue;
      const rolloutId = summary.Labels[LABELS.rolloutId] ?? this.claims.get(summary.Id) ?? null;
      if (rolloutId !== null) this.overQuota.set(rolloutId, used);
      await this.removeContainer(summary.Id);
      this.claims.delete(summary.Id);
      removed.push(rolloutId ?? summary.Id);
    }
    return removed;
  }

  /** Whether containers get the storage driver's quota (null until the first container was made). */
  diskQuotaMode(): 'storage-driver' | 'watcher' | 'none' | null {
    if (this.diskQuotaBytes <= 0) return 'none';
    return this.storageQuota === null ? null : this.storageQuota ? 'storage-driver' : 'watcher';
  }

  /**
   * Claims a ready warm-pool container for the rollout, or returns null (pool empty, or the rollout's name
   * was taken meanwhile: the caller's loop then finds that container). First the rollout id (claim file) and
   * the rollout's lease go into the idle container in one upload, then the rename to the rollout's name
   * commits the claim: it fails when the rollout's name exists, and whoever finds the container by that name
   * finds its claim file already there.
   */
  private async claimIdle(
    spec: SandboxSpec,
    rolloutId: string,
    name: string,
    hash: string,
    expiresAt: number,
  ): Promise<DockerSandbox | null> {
    for (;;) {
      const idle = this.pool?.take(spec, hash) ?? null;
      if (idle === null) {
        this.pool?.refill(hash);
        return null;
      }
      const sandbox = this.sandboxFor(idle.id, rolloutId, idle.labels);
      try {
        await sandbox.writeOwnedFiles(
          [
            { path: CLAIM_FILE, content: `${rolloutId}\n` },
            { path: LEASE_FILE, content: encodeLeaseFile(expiresAt) },
          ],
          ROOT_READABLE,
        );
        await this.docker.getContainer(idle.id).rename({ name });
      } catch (error) {
        // Gone meanwhile (its pool lease ran out): the next one. The name taken: a concurrent acquire of this
        // rollout won; this container carries a claim now, so it is not handed out again.
        const gone = error instanceof SandboxGoneError || isDockerNotFound(error);
        if (!gone && !isDockerConflict(error)) throw error;
        this.pool?.discard(idle);
        if (gone) continue;
        return null;
      }
      this.claims.set(idle.id, rolloutId);
      // Refilled only now, so creating the replacement does not slow the claim down.
      this.pool?.refill(hash);
      return sandbox;
    }
  }

  /** The Docker side of the warm pool: idle containers are created, renewed and removed by their idle name. */
  private warmPoolBackend(): WarmPoolBackend {
    return {
      createIdle: async (spec, specKey, pool, leaseMs) => {
        const name = poolContainerName(pool, specKey);
        const expiresAt = Date.now() + leaseMs;
        const { id, labels } = await this.createStarted(
          spec,
          { [LABELS.pool]: pool },
          name,
          specKey,
          expiresAt,
        );
        return { name, id, labels, expiresAt };
      },
      renewIdle: async (idle: IdleContainer, leaseMs) => {
        const byName = new DockerSandbox(this.docker, idle.name, '', '', this.limits);
        try {
          await byName.writeOwnedFile(LEASE_FILE, encodeLeaseFile(Date.now() + leaseMs), ROOT_READABLE);
          return true;
        } catch (error) {
          if (error instanceof SandboxGoneError) return false;
          throw error;
        }
      },
      removeIdle: async (idle: IdleContainer) => {
        // By its idle name: a container claimed meanwhile is not touched.
        const info = await this.inspectByName(idle.name);
        if (info !== null && info.Id === idle.id) await this.removeContainer(info.Id);
      },
    };
  }

  /**
   * The rollout a container belongs to: its label, or for a warm-pool container the claim file (null while
   * unclaimed). Throws `SandboxGoneError` when the container vanished while its file was read.
   */
  private async ownerOf(info: Docker.ContainerInspectInfo): Promise<string | null> {
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
  private async isOwnedBy(info: Docker.ContainerInspectInfo, rolloutId: string): Promise<boolean> {
    try {
      return (await this.ownerOf(info)) === rolloutId;
    } catch (error) {
      if (error instanceof SandboxGoneError) return false;
      throw error;
    }
  }

  /** Fills the warm pool of `spec` now (it otherwise fills on the spec's first acquire); no-op without one. */
  async prewarm(spec: SandboxSpec): Promise<void> {
    await this.pool?.prewarm(spec, specHash(spec));
  }

  /** How often acquires were served warm or cold, and the pool's own churn; null without a pool. */
  warmPoolStats(): (WarmPoolCounts & { instance: string }) | null {
    return this.pool ? { ...this.pool.stats(), instance: this.pool.instance } : null;
  }

  /** Stops the warm pool (removing its idle containers; claimed ones stay with their rollouts) and the watcher. */
  async close(): Promise<void> {
    if (this.quotaWatch !== null) clearInterval(this.quotaWatch);
    this.quotaWatch = null;
    await this.pool?.close();
  }

  async attach(rolloutId: string): Promise<Sandbox | null> {
    const info = await this.inspectByName(sandboxContainerName(rolloutId));
    if (info === null || !info.State.Running || !(await this.isOwnedBy(info, rolloutId))) return null;
    const now = Date.now();
    try {
      if ((await this.expiryOf(info.Id, info.Config.Labels, now)) <= now) return null;
    } catch (error) {
      if (error instanceof SandboxGoneError) return null;
      throw error;
    }
    return this.sandboxFor(info.Id, rolloutId, info.Config.Labels);
  }

  async renew(rolloutId: string, leaseMs: number): Promise<void> {
    const info = await this.inspectByName(sandboxContainerName(rolloutId));
    if (info === null || !info.State.Running || !(await this.isOwnedBy(info, rolloutId))) {
      throw new SandboxGoneError(rolloutId);
    }
    const sandbox = this.sandboxFor(info.Id, rolloutId, info.Config.Labels);
    await sandbox.writeOwnedFile(LEASE_FILE, encodeLeaseFile(Date.now() + leaseMs), ROOT_READABLE);
  }

  async release(rolloutId: string): Promise<void> {
    const info = await this.inspectByName(sandboxContainerName(rolloutId));
    if (info === null || !(await this.isOwnedBy(info, rolloutId))) return;
    await this.removeContainer(info.Id);
    this.claims.delete(info.Id);
  }

  async reapExpired(now: number = Date.now()): Promise<string[]> {
    const containers = await this.docker.listContainers({
      all: true,
      filters: { label: this.managedFilter },
    });
    const reaped: string[] = [];
    const failures: unknown[] = [];
    for (const summary of containers) {
      try {
        if ((await this.expiryOf(summary.Id, summary.Labels, now)) > now) continue;
        await this.removeContainer(summary.Id);
        this.claims.delete(summary.Id);
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

  /**
   * The lease's end: the label's expiry, or the renewal file's when later. The file is read only when the
   * label alone says the lease ended by `now` (renewals only extend it). Throws `SandboxGoneError`.
   */
  private async expiryOf(containerId: string, labels: Record<string, string>, now: number): Promise<number> {
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

  private sandboxFor(containerId: string, rolloutId: string, labels: Record<string, string>): DockerSandbox {
    return new DockerSandbox(this.docker, containerId, rolloutId, labels[LABELS.execUser] ?? '', this.limits);
  }

  private async inspectByName(name: string): Promise<Docker.ContainerInspectInfo | null> {
    try {
      return await this.docker.getContainer(name).inspect();
    } catch (error) {
      if (isDockerNotFound(error)) return null;
      throw error;
    }
  }

  /** Removes a container (killing it first); "already gone" and "already being removed" are success. */
  private async removeContainer(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).remove({ force: true });
    } catch (error) {
      if (isDockerNotFound(error)) return;
      if (!isDockerConflict(error)) throw error;
    }
    // AutoRemove may be removing it at the same moment: wait until it is really gone.
    for (let attempt = 0; attempt < 100; attempt += 1) {
      if ((await this.inspectByName(id)) === null) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /**
   * The image's USER and WORKDIR, checking on the way that the image is here: one that is not is pulled once
   * where allowed, and otherwise refused with how to provide it.
   */
  private async imageConfig(image: string): Promise<{ user: string; workingDir: string }> {
    const inspect = async () => {
      const info = await this.docker.getImage(image).inspect();
      return { user: info.Config.User ?? '', workingDir: info.Config.WorkingDir ?? '' };
    };
    try {
      return await inspect();
    } catch (error) {
      if (!isDockerNotFound(error)) throw error;
    }
    if (!this.pullMissingImages || image.startsWith('openclaw/')) throw new SandboxImageMissingError(image);
    try {
      await this.pull(image);
      return await inspect();
    } catch (error) {
      throw new SandboxImageMissingError(image, (error as Error).message.split('\n')[0]);
    }
  }

  private async pull(image: string): Promise<void> {
    const stream = await this.docker.pull(image);
    await new Promise<void>((resolve, reject) =>
      this.docker.modem.followProgress(stream, (error: Error | null) => (error ? reject(error) : resolve())),
    );
  }
}
