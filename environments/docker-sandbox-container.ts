// One sandbox container seen through the `Sandbox` interface: commands run through the Docker exec API under
// `timeout -s KILL` (the kill reaches the command's whole process group, so a fork bomb or a runaway child
// dies with it), and files move in and out as tar archives. The host also keeps its own deadline, in case the
// command never started or the stream hangs.

import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import {
  isDockerConflict,
  isDockerNotFound,
  SandboxFileNotFoundError,
  SandboxGoneError,
} from './docker-errors.js';
import { ExecOutputDemuxer } from './exec-output.js';
import type { ExecOptions, ExecResult, Sandbox } from './sandbox.js';
import { packFile, packFiles, readSingleFile, type TarFileOwner } from './tar-file.js';

export interface DockerSandboxLimits {
  /** Kept per output stream of one exec (bytes); the rest is dropped with a note. */
  maxOutputBytes: number;
  /** Largest file `readFile` returns (bytes). */
  maxReadBytes: number;
  /** How long past its timeout the host waits for an exec's stream before abandoning it. */
  execGraceMs: number;
}

/** Exit status of a process killed by SIGKILL, as a shell reports it. */
const KILLED_STATUS = 137;
/** Files the environment places are root's and read-only to the sandbox user, so its code cannot rewrite them. */
const ENVIRONMENT_FILE_OWNER: TarFileOwner = { uid: 0, gid: 0, mode: 0o644 };

export class DockerSandbox implements Sandbox {
  readonly id: string;
  private readonly container: Docker.Container;

  constructor(
    docker: Docker,
    containerId: string,
    readonly rolloutId: string,
    /** The user commands run as unless `ExecOptions.user` says otherwise ('' = the container's user). */
    private readonly execUser: string,
    private readonly limits: DockerSandboxLimits,
  ) {
    this.id = containerId;
    this.container = docker.getContainer(containerId);
  }

  async exec(command: string[], options: ExecOptions): Promise<ExecResult> {
    if (command.length === 0) throw new Error('exec needs a command');
    if (!(options.timeoutMs > 0))
      throw new Error(`exec needs a positive timeoutMs, got ${options.timeoutMs}`);
    const timeoutSeconds = (Math.max(options.timeoutMs, 1) / 1000).toFixed(3); // "0" would mean never
    const exec = await this.withGoneCheck(() =>
      this.container.exec({
        Cmd: ['timeout', '-s', 'KILL', timeoutSeconds, ...command],
        AttachStdout: true,
        AttachStderr: true,
        AttachStdin: options.stdin !== undefined,
        Tty: false,
        User: options.user ?? this.execUser,
        ...(options.workdir !== undefined ? { WorkingDir: options.workdir } : {}),
        ...(options.env !== undefined
          ? { Env: Object.entries(options.env).map(([key, value]) => `${key}=${value}`) }
          : {}),
      }),
    );
    const startedAt = Date.now();
    const stream = (await this.withGoneCheck(() =>
      exec.start({ hijack: true, stdin: options.stdin !== undefined }),
    )) as Duplex;
    const output = new ExecOutputDemuxer(this.limits.maxOutputBytes);
    const finished = await this.drain(
      stream,
      output,
      options.stdin,
      options.timeoutMs + this.limits.execGraceMs,
    );
    const elapsedMs = Date.now() - startedAt;
    const exitCode = finished ? await this.exitCodeOf(exec) : null;
    // `timeout -s KILL` kills its own process group too, so a timeout shows as 137, like any SIGKILL (e.g. the
    // OOM killer); the elapsed time tells them apart.
    const timedOut = !finished || (exitCode === KILLED_STATUS && elapsedMs >= options.timeoutMs);
    return {
      exitCode: timedOut ? null : exitCode,
      stdout: output.stdout(),
      stderr: output.stderr(),
      timedOut,
    };
  }

  /** Reads the stream to its end; false when the host deadline passed first (the stream is then destroyed). */
  private drain(
    stream: Duplex,
    output: ExecOutputDemuxer,
    stdin: string | undefined,
    deadlineMs: number,
  ): Promise<boolean> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (finished: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (!finished) stream.destroy();
        resolve(finished);
      };
      const timer = setTimeout(() => settle(false), deadlineMs);
      stream.on('data', (chunk: Buffer) => output.push(chunk));
      stream.on('end', () => settle(true));
      stream.on('close', () => settle(true));
      stream.on('error', () => settle(true));
      if (stdin !== undefined) stream.end(stdin);
    });
  }

  /** The exec's exit code; Docker may report Running for a moment after the stream closed. */
  private async exitCodeOf(exec: Docker.Exec): Promise<number | null> {
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const info = await exec.inspect();
      if (!info.Running) return info.ExitCode;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return null;
  }

  async writeFile(path: string, content: string | Buffer): Promise<void> {
    await this.writeOwnedFile(path, content, ENVIRONMENT_FILE_OWNER);
  }

  /** Writes a file with the given owner and mode (the provider uses it for the lease file). */
  async writeOwnedFile(path: string, content: string | Buffer, owner: TarFileOwner): Promise<void> {
    const archive = await packFile(path, typeof content === 'string' ? Buffer.from(content) : content, owner);
    await this.withGoneCheck(() => this.container.putArchive(archive, { path: '/' }));
  }

  /** Writes several files in one upload (the warm-pool claim writes its claim and lease files together). */
  async writeOwnedFiles(
    files: readonly { path: string; content: string }[],
    owner: TarFileOwner,
  ): Promise<void> {
    const archive = await packFiles(
      files.map(({ path, content }) => ({ path, content: Buffer.from(content) })),
      owner,
    );
    await this.withGoneCheck(() => this.container.putArchive(archive, { path: '/' }));
  }

  async readFile(path: string): Promise<Buffer> {
    let archive: NodeJS.ReadableStream;
    try {
      archive = await this.container.getArchive({ path });
    } catch (error) {
      if (isDockerNotFound(error)) {
        // 404 means either no such path or no such container; tell them apart.
        await this.withGoneCheck(() => this.container.inspect());
        throw new SandboxFileNotFoundError(this.rolloutId, path);
      }
      throw error;
    }
    return readSingleFile(archive, this.limits.maxReadBytes);
  }

  /** Runs an Engine API call, turning "no such container" into `SandboxGoneError`. */
  private async withGoneCheck<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (isDockerNotFound(error) || (isDockerConflict(error) && /is not running/.test(String(error)))) {
        throw new SandboxGoneError(this.rolloutId);
      }
      throw error;
    }
  }
}
