// The real Track 1 parts a benchmark runs against, each started fresh and stopped at the end: a Temporal dev
// server on a free port (its database in a temporary folder, so it can be killed and restarted), the policy
// engine (the reference engine with `--trainer`, or vLLM with the reference trainer beside it; a tiny random
// model), the fake judge where scoring runs, the control worker in this process, and the gateway on the
// filesystem store (fsync'd). With `postgres`, also a PostgreSQL server (Debian's package,
// test/support/postgres-server.ts) with a second gateway and control worker on it.

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime, type Worker } from '@temporalio/worker';
import { type DevServer, startTemporalDevServer } from '../../cli/temporal-dev-server.js';
import { loadConfig, type OpenClawConfig, type OpenClawConfigInput } from '../../core/config.js';
import type { EngineKind } from '../../core/engine-kinds.js';
import type { EngineAdapter } from '../../engines/engine-adapter.js';
import { createEngineAdapter } from '../../engines/engine-adapters.js';
import {
  type EngineProcess,
  type EngineProcessOptions,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { startVllm } from '../../engines/vllm-process.js';
import { type RunningGateway, startGateway } from '../../gateway/main.js';
import { PostgresSampleStore } from '../../store/postgres-store.js';
import { FileSampleStore, type SampleStore } from '../../store/sample-store.js';
import { connectClient, connectWorker } from '../../temporal/connection.js';
import { type FakeJudge, startFakeJudge } from '../../test/support/fake-judge-server.js';
import { startPostgres } from '../../test/support/postgres-server.js';
import { createControlWorker } from '../../workers/control-worker.js';
import { benchPayloadKeysEnv } from './payload-keys.js';
import { machineBusySeconds } from './process-cpu.js';

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
  /** Also a PostgreSQL server, a gateway on a PostgreSQL store and a control worker on it (queue `control-pg`). */
  postgres?: boolean;
  /** More flags of the reference engine (tenants' adapters: `adapterRank`, `maxLoras`). */
  engineOptions?: Pick<EngineProcessOptions, 'adapterRank' | 'maxLoras'>;
}

/** A gateway of the stack with its store, its durable-write times and its relay's delivery lags. */
export interface BenchGateway {
  gateway: RunningGateway;
  store: SampleStore;
  /** Milliseconds each durable write of a turn with its outbox entry took. */
  storeTimes: number[];
  /** Milliseconds from an entry being durable to its session workflow accepting it. */
  lagMs: number[];
  /** Per answered turn: ms from the engine's last byte to the answer's, by turn type (gateway/metrics.ts). */
  afterEngineMs: { main: number[]; side: number[] };
  /** Per main turn: ms of the whole durable write (record, outbox entry, reply index). */
  recordMs: number[];
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
  /** The filesystem gateway (as `gateway`), and the PostgreSQL one with `postgres`. */
  file: BenchGateway | null;
  postgres: BenchGateway | null;
  /** Milliseconds each durable write (turn + outbox entry) of the filesystem gateway took. */
  storeTimes: number[];
  /** SIGKILL to the Temporal dev server; `startTemporal` brings it back on its address and database. */
  killTemporal(): Promise<void>;
  startTemporal(): Promise<void>;
  startWorker(): Promise<void>;
  /**
   * Waits until the outboxes are empty and the control workers have had no workflow activation or activity in
   * flight for `quietMs` (at most `capMs`), so work a block left behind does not land on the next one. Returns
   * the ms waited. With `machineBusyBelow`, the whole machine's busy share over those `quietMs` (every core,
   * every process: PostgreSQL's autovacuum and checkpoints, the kernel's writeback) must also be below it.
   */
  settle(quietMs: number, capMs?: number, machineBusyBelow?: number): Promise<number>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/** Task queue of the control worker that serves the PostgreSQL gateway's sessions. */
const POSTGRES_QUEUE = 'control-pg';

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

/** Times a store's create-if-absent writes (the recorder's durable write of a turn and its entry). */
function timed(store: SampleStore, times: number[]): SampleStore {
  const putIfAbsent = store.putIfAbsent.bind(store);
  return Object.assign(Object.create(store) as SampleStore, {
    async putIfAbsent(key: string, value: unknown, options?: Parameters<SampleStore['putIfAbsent']>[2]) {
      const started = performance.now();
      const result = await putIfAbsent(key, value, options);
      times.push(performance.now() - started);
      return result;
    },
  });
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
    let server: DevServer = await startTemporalDevServer(address, join(dir, 'temporal'));
    cleanups.push(() => server.stop());
    const killTemporal = async () => {
      const exited = new Promise<void>((resolve) => server.process.once('exit', () => resolve()));
      server.process.kill('SIGKILL');
      await exited;
    };
    const startTemporal = async () => {
      server = await startTemporalDevServer(address, join(dir, 'temporal'));
    };

    const postgresServer = options.postgres ? await startPostgres() : null;
    if (postgresServer) cleanups.push(() => postgresServer.destroy());

    const kind = options.engineKind ?? 'reference';
    const model = await makeTinyModel(join(dir, 'model'));
    const trainer = await startReferenceEngine({ model, trainer: true, ...options.engineOptions });
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
      // Payloads encrypted, as by default; no other setting from this environment.
      benchPayloadKeysEnv(),
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

    // The project's own connections (an empty environment: no TEMPORAL_* settings of this shell), with the
    // quick reconnects the gateway and the control worker have after a Temporal restart.
    const connected = await connectClient(config, {});
    cleanups.push(() => connected.close());
    const client: Client = connected.client;
    // As the configuration makes them (store.journal, store.poolSize), so benchmarks can compare settings.
    const store = new FileSampleStore(join(dir, 'store'), { journal: config.store.journal });
    cleanups.push(() => store.close());

    const postgresStore = postgresServer
      ? new PostgresSampleStore({ url: postgresServer.url, poolSize: config.store.poolSize })
      : null;
    if (postgresStore) cleanups.push(() => postgresStore.close());

    const workers: Worker[] = [];
    const startWorker = async () => {
      if (workers.length > 0) return;
      const lanes: [SampleStore, string][] = [[store, config.temporal.taskQueue]];
      if (postgresStore) lanes.push([postgresStore, POSTGRES_QUEUE]);
      for (const [laneStore, taskQueue] of lanes) {
        const native = await connectWorker(config, {});
        const created = await createControlWorker(
          config,
          native,
          client,
          { store: laneStore },
          { taskQueue },
        );
        workers.push(created);
        const running = created.run();
        cleanups.push(async () => {
          created.shutdown();
          await running.catch(() => undefined);
          await native.close();
        });
      }
    };
    if (options.startWorker !== false) await startWorker();

    const outboxes = [store, ...(postgresStore ? [postgresStore] : [])].map((s) => s.outbox);
    const settle = async (quietMs: number, capMs = 30_000, machineBusyBelow?: number): Promise<number> => {
      const started = performance.now();
      let quietSince = started;
      let machineAtQuiet = machineBusySeconds();
      const cores = cpus().length;
      for (;;) {
        const now = performance.now();
        const busy =
          workers.some((worker) => {
            const status = worker.getStatus();
            return status.numInFlightWorkflowActivations + status.numInFlightActivities > 0;
          }) || (await Promise.all(outboxes.map((o) => o.stats()))).some((stats) => stats.depth > 0);
        const quietFor = now - quietSince;
        const machineQuiet = () =>
          machineBusyBelow === undefined ||
          (machineBusySeconds() - machineAtQuiet) / ((quietFor / 1000) * cores) < machineBusyBelow;
        if (!busy && quietFor >= quietMs && machineQuiet()) return now - started;
        if (busy || quietFor >= quietMs) {
          // Busy, or quiet for long enough but the machine was not: the quiet time starts again.
          quietSince = now;
          machineAtQuiet = machineBusySeconds();
        }
        if (now - started >= capMs) return now - started;
        await new Promise((r) => setTimeout(r, 5));
      }
    };

    const startBenchGateway = async (laneStore: SampleStore, taskQueue: string): Promise<BenchGateway> => {
      const storeTimes: number[] = [];
      const lagMs: number[] = [];
      const afterEngineMs = { main: [] as number[], side: [] as number[] };
      const recordMs: number[] = [];
      // What startGateway builds by default, with the stack's store (timed) and client.
      const gateway = await startGateway(
        // No per-key rate limit: a benchmark sends far more than a client's default budget.
        { ...config, gateway: { ...config.gateway, port: 0, rateLimitPerMinute: 0 } },
        {
          store: timed(laneStore, storeTimes),
          temporal: client,
          taskQueue,
          logger: false,
          relay: { onDelivered: (lag) => lagMs.push(lag) },
          onTurnTiming: (timing) => {
            afterEngineMs[timing.turnType].push(timing.afterEngineMs);
            if (timing.recordMs !== null) recordMs.push(timing.recordMs);
          },
        },
      );
      cleanups.push(() => gateway.close());
      return { gateway, store: laneStore, storeTimes, lagMs, afterEngineMs, recordMs };
    };
    const file = options.gateway ? await startBenchGateway(store, config.temporal.taskQueue) : null;
    const postgres =
      options.gateway && postgresStore ? await startBenchGateway(postgresStore, POSTGRES_QUEUE) : null;

    return {
      dir,
      config,
      engine,
      adapter: createEngineAdapter(kind, engine.url),
      modelName: kind === 'vllm' ? 'default' : 'tiny',
      judge,
      client,
      store,
      gateway: file?.gateway ?? null,
      file,
      postgres,
      storeTimes: file?.storeTimes ?? [],
      killTemporal,
      startTemporal,
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
