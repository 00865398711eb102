// The real Track 1 parts a benchmark runs against, each started fresh and stopped at the end: a Temporal dev
// server on a free port (its database in a temporary folder), the policy engine (the reference engine with
// `--trainer`, or vLLM with the reference trainer beside it; a tiny random model), the fake judge where
// scoring runs, the control worker in this process, and the gateway.

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { FileSampleStore } from '../../activities/sample-store.js';
import { type DevServer, startTemporalDevServer } from '../../cli/temporal-dev-server.js';
import {
  type EngineKind,
  loadConfig,
  type OpenClawConfig,
  type OpenClawConfigInput,
} from '../../core/config.js';
import type { EngineAdapter } from '../../engines/engine-adapter.js';
import { createEngineAdapter } from '../../engines/engine-adapters.js';
import { DurableTurnRecorder } from '../../gateway/durable-turn-recorder.js';
import { type RunningGateway, startGateway } from '../../gateway/main.js';
import { sessionSettingsFromConfig } from '../../gateway/session-delivery.js';
import type { RecordedTurn, TurnDraft, TurnRecorder } from '../../gateway/turn-recorder.js';
import { type FakeJudge, startFakeJudge } from '../../test/support/fake-judge-server.js';
import { createControlWorker } from '../../workers/control-worker.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../workers/reference-engine-process.js';
import { startVllm } from '../../workers/vllm-process.js';

export interface StackOptions {
  /** Config overrides (runId, method, training, session...); engine, judge, dataDir and temporal are set here. */
  config?: OpenClawConfigInput;
  /** Start the fake judge and point the config's judge at it. */
  judge?: boolean;
  /** Start the gateway (its recorder timed, see `Stack.recordTimes`). */
  gateway?: boolean;
  /** Start the control worker now (default); false leaves it to `startWorker()`. */
  startWorker?: boolean;
  /** Which engine serves (default the reference engine); vLLM gets the reference trainer beside it. */
  engineKind?: EngineKind;
}

export interface Stack {
  dir: string;
  config: OpenClawConfig;
  engine: EngineProcess;
  /** The serving engine's adapter (what the gateway talks through). */
  adapter: EngineAdapter;
  /** The `model` requests name (vLLM refuses others). */
  modelName: string;
  judge: FakeJudge | null;
  client: Client;
  store: FileSampleStore;
  gateway: RunningGateway | null;
  /** Milliseconds each `record()` of the gateway's durable recorder took (store write + signal-with-start). */
  recordTimes: number[];
  /** Milliseconds each of the recorder's create-if-absent store writes took (its share of `recordTimes`). */
  storeTimes: number[];
  startWorker(): Promise<void>;
  /**
   * Waits until the control worker has had no workflow activation or activity in flight for `quietMs`
   * (at most `capMs`), so work a block left behind does not land on the next one. Returns the ms waited.
   */
  settle(quietMs: number, capMs?: number): Promise<number>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/** A TCP port free on 127.0.0.1 whose +1000 neighbour (the dev server's UI) is free too. */
async function freePortPair(): Promise<number> {
  const probe = (port: number) =>
    new Promise<number | null>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(null));
      server.listen(port, '127.0.0.1', () => {
        const chosen = (server.address() as { port: number }).port;
        server.close(() => resolve(chosen));
      });
    });
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await probe(0);
    if (port === null || port + 1000 > 65535) continue;
    if ((await probe(port + 1000)) !== null) return port;
  }
  throw new Error('no free port pair found');
}

/** The sample store with its create-if-absent writes (the recorder's claim of a turn) timed. */
class TimedStore extends FileSampleStore {
  constructor(
    root: string,
    private readonly times: number[],
  ) {
    super(root);
  }
  override async putIfAbsent(key: string, value: unknown): Promise<boolean> {
    const started = performance.now();
    const result = await super.putIfAbsent(key, value);
    this.times.push(performance.now() - started);
    return result;
  }
}

/** Wraps the gateway's durable recorder to time each hand-off; behaviour is unchanged. */
class TimedRecorder implements TurnRecorder {
  constructor(
    private readonly inner: TurnRecorder,
    private readonly times: number[],
  ) {}
  async record(draft: TurnDraft): Promise<RecordedTurn> {
    const started = performance.now();
    const result = await this.inner.record(draft);
    this.times.push(performance.now() - started);
    return result;
  }
  endSession(sessionId: string): Promise<void> {
    return this.inner.endSession(sessionId);
  }
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    runtimeInstalled = true;
  }
  const cleanups: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const dir = await mkdtemp(join(tmpdir(), 'openclaw-bench-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));

    const address = `127.0.0.1:${await freePortPair()}`;
    const server: DevServer = await startTemporalDevServer(address, join(dir, 'temporal'));
    cleanups.push(() => server.stop());

    const kind = options.engineKind ?? 'reference';
    const model = await makeTinyModel(join(dir, 'model'), 0, kind === 'vllm' ? 64 : 16);
    const trainer = await startReferenceEngine({ model, trainer: true });
    cleanups.push(() => trainer.stop());
    let engine: EngineProcess = trainer;
    if (kind === 'vllm') {
      const vllm = await startVllm({ model, servedModelName: 'default', device: 'cpu' });
      cleanups.push(() => vllm.stop());
      engine = vllm;
    } else if (kind !== 'reference') throw new Error(`the benchmark stack cannot start ${kind}`);

    const judge = options.judge ? await startFakeJudge() : null;
    if (judge) cleanups.push(() => judge.close());

    const loaded = loadConfig(
      {},
      {
        ...options.config,
        dataDir: dir,
        engine: { kind, url: engine.url },
        trainer: { ...options.config?.trainer, url: trainer.url },
        teacher: { url: engine.url },
        judge: { ...(judge ? { baseUrl: judge.url, model: 'fake-judge' } : {}), ...options.config?.judge },
        temporal: { address, ...options.config?.temporal },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    const config = loaded.config;

    const connection = await Connection.connect({ address });
    cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace: config.temporal.namespace });
    const store = new FileSampleStore(join(dir, 'store'));

    let worker: Worker | null = null;
    const startWorker = async () => {
      if (worker) return;
      const native = await NativeConnection.connect({ address });
      const created = await createControlWorker(config, native, client, { store });
      worker = created;
      const running = created.run();
      cleanups.push(async () => {
        created.shutdown();
        await running.catch(() => undefined);
        await native.close();
      });
    };
    if (options.startWorker !== false) await startWorker();

    const settle = async (quietMs: number, capMs = 30_000): Promise<number> => {
      const started = performance.now();
      let quietSince = started;
      for (;;) {
        const now = performance.now();
        const status = worker?.getStatus();
        const busy =
          status !== undefined && status.numInFlightWorkflowActivations + status.numInFlightActivities > 0;
        if (busy) quietSince = now;
        else if (now - quietSince >= quietMs) return now - started;
        if (now - started >= capMs) return now - started;
        await new Promise((r) => setTimeout(r, 5));
      }
    };

    const recordTimes: number[] = [];
    const storeTimes: number[] = [];
    let gateway: RunningGateway | null = null;
    if (options.gateway) {
      // What startGateway builds by default, with the same store, client and session settings, plus a timer.
      const recorder = new DurableTurnRecorder({
        store: new TimedStore(store.root, storeTimes),
        client,
        session: sessionSettingsFromConfig(config),
        taskQueue: config.temporal.taskQueue,
      });
      const config0 = { ...config, gateway: { ...config.gateway, port: 0 } };
      gateway = await startGateway(config0, {
        recorder: new TimedRecorder(recorder, recordTimes),
        logger: false,
      });
      const running = gateway;
      cleanups.push(() => running.close());
    }

    return {
      dir,
      config,
      engine,
      adapter: createEngineAdapter(kind, engine.url),
      modelName: kind === 'vllm' ? 'default' : 'tiny',
      judge,
      client,
      store,
      gateway,
      recordTimes,
      storeTimes,
      startWorker,
      settle,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Stops the stack on Ctrl-C too, so no engine or dev server outlives the benchmark. */
export function stopOnSignal(stack: () => Stack | null): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void (stack()?.close() ?? Promise.resolve()).finally(() => process.exit(130));
    });
  }
}
