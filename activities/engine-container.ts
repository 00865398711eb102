// Supervises one policy engine container (SGLang, or the reference engine) on a GPU host through the local
// Docker engine: creates and starts it, waits until /health (and /health_generate where the engine has it)
// answers, streams its output to a logger, restarts it with backoff when it exits without being asked
// (counted), and stops and removes it on `stop`. Weight updates go to the engine's HTTP API directly
// (publishWeights), not through here.
import { PassThrough } from 'node:stream';
import Docker from 'dockerode';
import { isDockerNotFound } from '../environments/docker-errors.js';
import {
  type EngineContainerSettings,
  type EngineContainerSettingsInput,
  engineContainerSpec,
  parseEngineContainerSettings,
} from './engine-container-settings.js';

export interface EngineLogger {
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  error(message: string, meta?: Record<string, unknown>): void;
}

export type EngineState = 'stopped' | 'starting' | 'healthy' | 'restarting' | 'stopping';

export interface EngineStatus {
  hostId: string;
  name: string;
  kind: EngineContainerSettings['kind'];
  image: string;
  url: string;
  state: EngineState;
  containerId: string | null;
  /** Restarts after the engine exited on its own (or failed to become healthy). */
  crashRestarts: number;
  /** Restarts asked for (restartEngine). */
  requestedRestarts: number;
  lastExit: { code: number | null; at: string } | null;
  /** Milliseconds from `docker start` to a healthy answer, for the last start that got there. */
  lastStartToHealthyMs: number | null;
  healthySince: string | null;
  lastError: string | null;
}

export class EngineStartTimeoutError extends Error {
  constructor(name: string, timeoutMs: number) {
    super(`engine ${name} did not become healthy within ${Math.round(timeoutMs / 1000)} s`);
    this.name = 'EngineStartTimeoutError';
  }
}

class EngineExitedError extends Error {
  constructor(readonly code: number | null) {
    super(`the engine exited with code ${code} before it became healthy`);
    this.name = 'EngineExitedError';
  }
}

export interface EngineSupervisorOptions {
  settings: EngineContainerSettingsInput;
  hostId: string;
  docker?: Docker;
  logger?: EngineLogger;
  /** Poll interval of the health wait (default 500 ms). */
  healthPollMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class EngineSupervisor {
  readonly settings: EngineContainerSettings;
  readonly url: string;
  private readonly docker: Docker;
  private readonly logger: EngineLogger | undefined;
  private readonly healthPollMs: number;
  private state: EngineState = 'stopped';
  private containerId: string | null = null;
  private crashRestarts = 0;
  private requestedRestarts = 0;
  private crashesInARow = 0;
  private lastExit: EngineStatus['lastExit'] = null;
  private lastStartToHealthyMs: number | null = null;
  private healthySince: string | null = null;
  private lastError: string | null = null;
  /** Bumped on every launch and stop, so a stale exit watcher knows it is no longer in charge. */
  private generation = 0;
  private stopRequested = false;
  private started = false;
  private readonly healthyWaiters = new Set<() => void>();
  private wakeBackoff: (() => void) | null = null;

  constructor(private readonly options: EngineSupervisorOptions) {
    this.settings = parseEngineContainerSettings(options.settings);
    this.docker = options.docker ?? new Docker();
    this.logger = options.logger;
    this.healthPollMs = options.healthPollMs ?? 500;
    const host = ['0.0.0.0', '::'].includes(this.settings.bindAddress)
      ? '127.0.0.1'
      : this.settings.bindAddress;
    this.url = `http://${host}:${this.settings.hostPort}`;
  }

  status(): EngineStatus {
    const spec = engineContainerSpec(this.settings, this.options.hostId);
    return {
      hostId: this.options.hostId,
      name: this.settings.name,
      kind: this.settings.kind,
      image: spec.Image,
      url: this.url,
      state: this.state,
      containerId: this.containerId,
      crashRestarts: this.crashRestarts,
      requestedRestarts: this.requestedRestarts,
      lastExit: this.lastExit,
      lastStartToHealthyMs: this.lastStartToHealthyMs,
      healthySince: this.healthySince,
      lastError: this.lastError,
    };
  }

  /**
   * Starts the engine and keeps it up (restarting it when it exits) until `stop`. Resolves once it is
   * healthy the first time; rejects if that first start fails (the container is removed then).
   */
  async start(): Promise<EngineStatus> {
    if (this.started) {
      await this.untilHealthy();
      return this.status();
    }
    this.started = true;
    this.stopRequested = false;
    try {
      await this.launch();
    } catch (error) {
      this.started = false;
      this.state = 'stopped';
      throw error;
    }
    return this.status();
  }

  /** Resolves when the engine is healthy (now or after the restart in progress). */
  untilHealthy(): Promise<void> {
    if (this.state === 'healthy') return Promise.resolve();
    return new Promise((resolve) => this.healthyWaiters.add(resolve));
  }

  /** Stops and starts the engine again (a fresh container) and waits until it is healthy. */
  async restart(): Promise<EngineStatus> {
    this.requestedRestarts += 1;
    this.started = true;
    this.stopRequested = false;
    this.generation += 1; // the exit of the container removed here is not a crash
    this.state = 'restarting';
    await this.removeContainer();
    try {
      await this.launch();
    } catch (error) {
      // The host keeps trying (with backoff) after telling the caller.
      void this.restartAfterCrash();
      throw error;
    }
    return this.status();
  }

  /** Stops the engine and removes its container; no restart follows. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    this.generation += 1;
    this.wakeBackoff?.();
    this.state = 'stopping';
    await this.removeContainer();
    this.state = 'stopped';
    this.started = false;
  }

  /** One start: a fresh container, then the health wait; on an early exit or timeout it is removed. */
  private async launch(): Promise<void> {
    const generation = ++this.generation;
    this.state = this.state === 'restarting' ? 'restarting' : 'starting';
    this.healthySince = null;
    // A container of this name left by an earlier run (a crashed worker) is replaced.
    await this.removeByName();
    const spec = engineContainerSpec(this.settings, this.options.hostId);
    const container = await this.docker.createContainer(spec).catch((error: unknown) => {
      if (isDockerNotFound(error))
        throw new Error(`image ${spec.Image} is not on this Docker host: docker pull (or build) it first`);
      throw error;
    });
    this.containerId = container.id;
    const exited = this.watchExit(container, generation);
    const startedAt = Date.now();
    try {
      await container.start();
    } catch (error) {
      // E.g. the port is taken, or GPUs were asked for where Docker has no NVIDIA runtime.
      this.lastError = `docker start ${this.settings.name}: ${(error as Error).message}`;
      if (generation === this.generation) await this.removeContainer();
      throw new Error(this.lastError);
    }
    if (generation !== this.generation) {
      // Stopped while this start was under way: the container is not the engine any more.
      await container.remove({ force: true }).catch(() => undefined);
      return;
    }
    this.followLogs(container);
    this.logger?.info('engine container started', {
      name: this.settings.name,
      id: container.id.slice(0, 12),
    });
    try {
      await Promise.race([
        this.waitHealthy(generation),
        exited.then((code) => Promise.reject(new EngineExitedError(code))),
      ]);
    } catch (error) {
      this.lastError = (error as Error).message;
      if (generation === this.generation) await this.removeContainer();
      throw error;
    }
    if (generation !== this.generation) return;
    this.lastStartToHealthyMs = Date.now() - startedAt;
    this.healthySince = new Date().toISOString();
    this.state = 'healthy';
    this.crashesInARow = 0;
    this.lastError = null;
    this.logger?.info('engine healthy', { url: this.url, startToHealthyMs: this.lastStartToHealthyMs });
    for (const resolve of this.healthyWaiters) resolve();
    this.healthyWaiters.clear();
    this.watchLiveness(generation);
  }

  /** Resolves with the exit code when the container stops; a crash of the current one is restarted. */
  private watchExit(container: Docker.Container, generation: number): Promise<number | null> {
    // Asked before `start`: `next-exit`, since the default condition answers at once for a created container.
    const exited = container.wait({ condition: 'next-exit' }).then(
      (result: { StatusCode?: number }) => result.StatusCode ?? null,
      () => null,
    );
    void exited.then((code) => {
      if (generation !== this.generation || this.stopRequested) return;
      this.lastExit = { code, at: new Date().toISOString() };
      // Failed starts are handled by the restart loop below: only a healthy engine's exit starts one.
      if (this.state !== 'healthy') return;
      this.logger?.warn('engine exited without being asked; restarting', { code });
      void this.restartAfterCrash();
    });
    return exited;
  }

  /** Restarts with backoff until a start gets healthy or `stop` is called. */
  private async restartAfterCrash(): Promise<void> {
    for (;;) {
      if (this.stopRequested) return;
      this.state = 'restarting';
      this.crashRestarts += 1;
      const delay = Math.min(
        this.settings.restartMaxDelayMs,
        this.settings.restartDelayMs * 2 ** Math.min(this.crashesInARow, 20),
      );
      this.crashesInARow += 1;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.wakeBackoff = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeBackoff = null;
      if (this.stopRequested) return;
      try {
        await this.launch();
        return;
      } catch (error) {
        this.logger?.error('engine restart failed', {
          error: (error as Error).message,
          crashRestarts: this.crashRestarts,
        });
      }
    }
  }

  private async waitHealthy(generation: number): Promise<void> {
    const deadline = Date.now() + this.settings.healthTimeoutMs;
    while (Date.now() < deadline) {
      if (generation !== this.generation) return;
      if (await this.healthy()) return;
      await sleep(this.healthPollMs);
    }
    throw new EngineStartTimeoutError(this.settings.name, this.settings.healthTimeoutMs);
  }

  /** /health answers, and /health_generate (which runs one token) does too where the engine has it. */
  private async healthy(): Promise<boolean> {
    if ((await this.statusOf('/health')) !== 200) return false;
    const generate = await this.statusOf('/health_generate');
    return generate === 200 || generate === 404;
  }

  /** The HTTP status of a GET, or 0 when there is no answer in time. */
  private statusOf(path: string): Promise<number> {
    return fetch(`${this.url}${path}`, {
      signal: AbortSignal.timeout(this.settings.healthRequestTimeoutMs),
      // /health_generate is behind the engine's token, when it has one.
      ...(this.settings.token && { headers: { authorization: `Bearer ${this.settings.token}` } }),
    }).then(
      async (response) => {
        await response.body?.cancel();
        return response.status;
      },
      () => 0,
    );
  }

  /** While this start is the current one and healthy: a hung engine is restarted like a crashed one. */
  private watchLiveness(generation: number): void {
    const { livenessIntervalMs, livenessFailures } = this.settings;
    if (livenessIntervalMs <= 0) return;
    void (async () => {
      let failures = 0;
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, livenessIntervalMs).unref());
        if (generation !== this.generation || this.state !== 'healthy') return;
        failures = (await this.statusOf('/health')) === 200 ? 0 : failures + 1;
        if (generation !== this.generation || this.state !== 'healthy') return;
        if (failures < livenessFailures) continue;
        this.logger?.warn('engine stopped answering /health; restarting', { failures });
        this.lastError = `no answer to /health ${failures} times in a row`;
        this.generation += 1; // the exit of the container removed here is not another crash
        this.state = 'restarting';
        await this.removeContainer().catch(() => undefined);
        void this.restartAfterCrash();
        return;
      }
    })();
  }

  /** Engine output, line by line, to the logger (SGLang logs everything to stderr, so both go out as info). */
  private followLogs(container: Docker.Container): void {
    if (!this.logger) return;
    const logger = this.logger;
    const name = this.settings.name;
    void container
      .logs({ follow: true, stdout: true, stderr: true })
      .then((stream) => {
        const out = new PassThrough();
        this.docker.modem.demuxStream(stream, out, out);
        stream.on('end', () => out.end());
        let pending = '';
        out.on('data', (chunk: Buffer) => {
          const lines = (pending + chunk.toString('utf8')).split('\n');
          pending = lines.pop() ?? '';
          for (const line of lines) if (line.trim()) logger.info(line.trimEnd(), { engine: name });
        });
      })
      .catch(() => undefined);
  }

  private async removeContainer(): Promise<void> {
    const id = this.containerId;
    this.containerId = null;
    if (id === null) return;
    await this.docker
      .getContainer(id)
      .remove({ force: true })
      .catch((error: unknown) => {
        if (!isDockerNotFound(error) && !String(error).includes('already in progress')) throw error;
      });
  }

  private async removeByName(): Promise<void> {
    await this.docker
      .getContainer(this.settings.name)
      .remove({ force: true })
      .catch((error: unknown) => {
        if (!isDockerNotFound(error)) throw error;
      });
    // Removal is asynchronous in the Engine: wait until the name is free.
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const gone = await this.docker
        .getContainer(this.settings.name)
        .inspect()
        .then(
          () => false,
          () => true,
        );
      if (gone) return;
      await sleep(100);
    }
  }
}
