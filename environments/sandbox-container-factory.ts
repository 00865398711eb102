// Creates and starts sandbox containers, each locked down: no network unless the spec asks, all capabilities
// dropped, no-new-privileges, memory without swap, CPU quota, pids limit, file-size limit, and the disk quota
// (container-disk-quota.ts). Its main process is the lease keeper (sandbox-lease.ts). Commands run as a
// non-root user where the spec asks and the image allows (`runAs: 'non-root'`): the working directory is
// handed over to that user once the container has started.

import type Docker from 'dockerode';
import type { ContainerDiskQuota } from './container-disk-quota.js';
import { removeContainer } from './docker-containers.js';
import { isDockerNotFound, isTransientStartFailure, SandboxImageMissingError } from './docker-errors.js';
import { DockerSandbox, type DockerSandboxLimits } from './docker-sandbox-container.js';
import type { SandboxSpec } from './sandbox.js';
import { LABELS, leaseKeeperCommand } from './sandbox-lease.js';

/** The user commands run as where the image's own is root (`runAs: 'non-root'`). */
export const NON_ROOT_USER = '1000:1000';
/** Its home, made at the hand-over. */
const NON_ROOT_HOME = '/home/sandbox';
/** Root may change ownership and write anywhere to hand the working directory over; the sandbox user cannot. */
const HAND_OVER_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER'];
/** Tries at a container whose start fails transiently (see isTransientStartFailure). */
const START_ATTEMPTS = 3;

function isRootUser(user: string): boolean {
  const name = user.split(':')[0] ?? '';
  return name === '' || name === 'root' || name === '0';
}

export interface SandboxContainerSettings {
  limits: DockerSandboxLimits;
  /** Largest file a sandbox process may write (RLIMIT_FSIZE). */
  maxFileBytes: number;
  /** How often the in-container keeper checks its lease. */
  keeperIntervalSeconds: number;
  /** Pull an image that is not on the host before giving up on it. */
  pullMissingImages: boolean;
  /** An OCI runtime registered with the Docker daemon; undefined for the daemon's. */
  runtime: string | undefined;
  /** Labelled on every container, so only providers of the same scope reap or police it. */
  scope: string | undefined;
}

export class SandboxContainerFactory {
  constructor(
    private readonly docker: Docker,
    private readonly settings: SandboxContainerSettings,
    private readonly diskQuota: ContainerDiskQuota,
  ) {}

  /** Creates and starts a locked-down, leased container; `owner` is its rollout-id or pool label. */
  async createStarted(
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
    const { maxFileBytes, runtime, scope } = this.settings;
    const labels = {
      [LABELS.managed]: 'true',
      ...(scope !== undefined && { [LABELS.scope]: scope }),
      ...owner,
      [LABELS.leaseExpiresAt]: String(expiresAt),
      [LABELS.specHash]: hash,
      [LABELS.execUser]: execUser,
    };
    const env = Object.entries(spec.env ?? {}).map(([key, value]) => `${key}=${value}`);
    if (handOver !== null && spec.env?.HOME === undefined) env.push(`HOME=${NON_ROOT_HOME}`);
    const options: Docker.ContainerCreateOptions = {
      name,
      Image: spec.image,
      // The keeper runs as root (without capabilities but those of a hand-over) so the sandbox user's code
      // cannot kill it; commands run as `execUser`.
      User: '0:0',
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: leaseKeeperCommand(expiresAt, this.settings.keeperIntervalSeconds),
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
        Ulimits: [{ Name: 'fsize', Soft: maxFileBytes, Hard: maxFileBytes }],
        ...(runtime !== undefined && { Runtime: runtime }),
      },
    };
    for (let attempt = 1; ; attempt += 1) {
      const container = await this.diskQuota.create(options);
      try {
        await container.start();
        if (handOver !== null) await this.handOver(container.id, handOver);
        return { id: container.id, labels };
      } catch (error) {
        // AutoRemove may already have removed it; either way the name is free again once this returns.
        await removeContainer(this.docker, container.id);
        if (attempt >= START_ATTEMPTS || !isTransientStartFailure(error)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
      }
    }
  }

  /** Gives the working directory (and a home) to the sandbox user, as root, before the policy runs. */
  private async handOver(containerId: string, workdir: string): Promise<void> {
    const root = new DockerSandbox(this.docker, containerId, '', '0:0', this.settings.limits);
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
    if (!this.settings.pullMissingImages || image.startsWith('openclaw/'))
      throw new SandboxImageMissingError(image);
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
