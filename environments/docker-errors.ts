// Reading dockerode's errors: the Engine API answers with an HTTP status, which docker-modem puts on the error.

/** The Engine API's HTTP status on a dockerode error, or undefined for anything else. */
export function dockerStatusCode(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const status = (error as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** 404: no such container, image, exec or path. */
export function isDockerNotFound(error: unknown): boolean {
  return dockerStatusCode(error) === 404;
}

/** 409: a name already in use, or a container already being removed. */
export function isDockerConflict(error: unknown): boolean {
  return dockerStatusCode(error) === 409;
}

/**
 * A start the Engine failed while setting up the container's mounts, which Docker 20.10 does now and then when
 * several containers start at once ("remount …/merged/etc/resolv.conf, flags: 0x44000: invalid argument"). The
 * same container created again starts; any other failure of a start would fail the same way again.
 */
export function isTransientStartFailure(error: unknown): boolean {
  if (dockerStatusCode(error) !== 500) return false;
  const message = (error as Error).message ?? '';
  return /\bremount\b.*\binvalid argument\b/i.test(message);
}

/** The sandbox's container no longer exists (its lease expired, or it was released): the episode is lost. */
export class SandboxGoneError extends Error {
  constructor(readonly rolloutId: string) {
    super(`the sandbox of rollout ${rolloutId} no longer exists`);
    this.name = 'SandboxGoneError';
  }
}

/**
 * The image a sandbox needs is not on this host and could not be pulled: the message says how to provide it
 * (this project's own images are built with `images build`; others are pulled or loaded where they can be).
 */
export class SandboxImageMissingError extends Error {
  constructor(
    readonly image: string,
    readonly pullError?: string,
  ) {
    const own = image.startsWith('openclaw/');
    const how = own
      ? 'build it with `openclaw-rl images build`'
      : `provide it: \`docker pull ${image}\` on this host where its registry is reachable, or pull it on a machine that can and load it here (\`docker save ${image} | docker load\` on this host), or build it (SWE-bench images: SWE-bench's harness, \`python -m swebench.harness.prepare_images\`)`;
    super(
      `image ${image} is not on this Docker host${pullError ? ` and pulling it failed (${pullError})` : ''}; ${how}`,
    );
    this.name = 'SandboxImageMissingError';
  }
}

/** A sandbox wrote more than its disk quota: its container was removed and the rollout cannot go on. */
export class SandboxDiskQuotaError extends Error {
  constructor(
    readonly rolloutId: string,
    readonly usedBytes: number,
    readonly quotaBytes: number,
  ) {
    super(
      `the sandbox of rollout ${rolloutId} wrote ${(usedBytes / 1024 ** 2).toFixed(0)} MiB, over its disk quota of ${(quotaBytes / 1024 ** 2).toFixed(0)} MiB; its container was removed`,
    );
    this.name = 'SandboxDiskQuotaError';
  }
}

/** A path that does not exist inside a sandbox that does. */
export class SandboxFileNotFoundError extends Error {
  constructor(
    readonly rolloutId: string,
    readonly path: string,
  ) {
    super(`no such file in the sandbox of rollout ${rolloutId}: ${path}`);
    this.name = 'SandboxFileNotFoundError';
  }
}
