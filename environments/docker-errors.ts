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

/** The sandbox's container no longer exists (its lease expired, or it was released): the episode is lost. */
export class SandboxGoneError extends Error {
  constructor(readonly rolloutId: string) {
    super(`the sandbox of rollout ${rolloutId} no longer exists`);
    this.name = 'SandboxGoneError';
  }
}

/** The image a sandbox needs is not on this host (no registry is assumed: build it with `images build`). */
export class SandboxImageMissingError extends Error {
  constructor(readonly image: string) {
    super(`image ${image} is not on this Docker host; build it with \`openclaw-rl images build\``);
    this.name = 'SandboxImageMissingError';
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
