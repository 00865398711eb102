// A sandbox is one container an episode runs in. Environments use only this interface; the Docker
// implementation (dockerode) lives beside it, so tests and other runtimes can provide their own.

export interface SandboxLimits {
  /** Memory limit in bytes. */
  memoryBytes: number;
  /** CPU quota in cores (e.g. 0.5). */
  cpus: number;
  /** Maximum number of processes in the container. */
  pids: number;
}

export interface SandboxSpec {
  /** Image to run (a task's own image when it names one). */
  image: string;
  limits: SandboxLimits;
  /** Network off unless the task needs it. */
  network: boolean;
  /** Run commands as this user; undefined: as `runAs` says. */
  user?: string;
  /**
   * Without `user`: `image` (the default) runs commands as the image's USER; `non-root` as the image's USER
   * when it is not root, else as uid:gid 1000:1000, to whom the working directory (`workdir`, else the image's
   * WORKDIR) is handed over when the container starts. An image that runs as root and has no working directory
   * but `/` keeps root (without capabilities).
   */
  runAs?: 'image' | 'non-root';
  workdir?: string;
  env?: Record<string, string>;
}

export interface ExecResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** The command ran past its timeout and was killed. */
  timedOut: boolean;
}

export interface ExecOptions {
  timeoutMs: number;
  stdin?: string;
  workdir?: string;
  user?: string;
  env?: Record<string, string>;
}

export interface Sandbox {
  /** The container id. */
  readonly id: string;
  exec(command: string[], options: ExecOptions): Promise<ExecResult>;
  writeFile(path: string, content: string | Buffer): Promise<void>;
  readFile(path: string): Promise<Buffer>;
}

/** A sandbox's lease: the container is labelled with its rollout id and expiry, and reaped once expired. */
export interface SandboxLease {
  sandboxId: string;
  rolloutId: string;
  /** Epoch milliseconds after which the reaper may remove the container. */
  expiresAt: number;
}

/** Creates, finds and removes sandboxes on one env host (the Docker implementation: docker-sandbox.ts). */
export interface SandboxProvider {
  /** Creates and starts a container for `rolloutId`, labelled with its lease; idempotent per rollout id. */
  acquire(
    spec: SandboxSpec,
    rolloutId: string,
    leaseMs: number,
  ): Promise<{ sandbox: Sandbox; lease: SandboxLease }>;
  /** The running container of a rollout, if it still exists (a restarted worker resumes on it). */
  attach(rolloutId: string): Promise<Sandbox | null>;
  /** Pushes the lease expiry forward (called with activity heartbeats). */
  renew(rolloutId: string, leaseMs: number): Promise<void>;
  /** Removes the rollout's container; succeeds if it is already gone. */
  release(rolloutId: string): Promise<void>;
  /** Removes every container whose lease expired; returns their ids. */
  reapExpired(now?: number): Promise<string[]>;
  /** Stops what the provider runs in the background (a warm pool) and removes its idle containers. */
  close?(): Promise<void>;
}
