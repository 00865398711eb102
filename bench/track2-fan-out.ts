// Container-free fan-out near the orchestrator's own limit: one agentic training step (no training) of the
// `arith` environment with a scripted policy, at two rollout counts, on two servers (the CLI's dev server and
// the real Temporal server on PostgreSQL), each count twice in the same run: with the real rollout workflow
// and with an EMPTY rollout (a child workflow with no activities, same tree, window and retries), the floor
// a rollout's cost is measured against. Every run gets a fresh server and fresh worker processes (the
// workflow worker and one env host), children of this process so their memory can be read from /proc.
// Prints rollouts/s and its ratio to the empty baseline, history events, history bytes and payload bytes
// per rollout, and server memory per rollout. `--inBatch 1` adds the same rollouts run as activities inside
// their batch workflows (`rolloutsAs: 'activities'`, the default mode); `--children 0` leaves out the rollouts
// as child workflows. Each case also prints where a rollout's time goes in the batch histories (waiting for a
// worker, running, the batch reacting to its end) and the CPU time each process spent per rollout, the
// figure that still compares on a loaded machine.
//   npm run bench:fan-out -- [--small 1000] [--large 10000] [--inFlight 200] [--samples 4] [--perBatch 250]
//                            [--dev 1] [--cluster 1] [--empty 1] [--inBatch 1] [--children 1] [--sample 40]
//                            [--sqlite 0|1]

import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { loadConfig } from '../core/config.js';
import { connectClient } from '../temporal/connection.js';
import { agenticWorkflowId } from '../temporal/workflow-ids.js';
import { WORKFLOW_TYPES } from '../temporal/workflow-starts.js';
import { answerRight } from '../test/support/numbered-arith.js';
import { startScriptedPolicy } from '../test/support/scripted-policy-server.js';
import { startTemporalCluster } from '../test/support/temporal-cluster.js';
import type { AgenticTrainingInput, AgenticTrainingWorkflow } from '../workflows/agentic-signals.js';
import { addBatchTimings, type BatchTimings, emptyBatchTimings } from './support/batch-timings.js';
import { startDevServerProcess } from './support/dev-server-process.js';
import { historyTotals, payloadBytes, workflowPayloadBytes } from './support/history-figures.js';
import { reportLoad } from './support/machine-load.js';
import { benchPayloadKeysEnv } from './support/payload-keys.js';
import { cpuSeconds, treeCpuSeconds } from './support/process-cpu.js';
import { mib, readMemory, sampleMemory, treePss } from './support/process-memory.js';
import { intOptions, median, ms, percentile, printTable, ratio } from './support/stats.js';

const options = intOptions(
  {
    small: 1000,
    large: 10_000,
    inFlight: 200,
    samples: 4,
    perBatch: 250,
    dev: 1,
    cluster: 1,
    empty: 1,
    inBatch: 1,
    children: 1,
    sample: 40,
    sqlite: 0,
  },
  'npx tsx bench/track2-fan-out.ts: arith rollouts (and empty ones) through fresh Temporal servers and worker processes',
);

const WORKER_SCRIPT = fileURLToPath(new URL('./support/fan-out-worker.ts', import.meta.url));

type ServerKind = 'dev' | 'cluster';
/** `in-batch`: the same rollouts with `rolloutsAs: 'activities'`, no child workflow each. */
type Variant = 'empty' | 'rollout' | 'in-batch';

interface RunFigures {
  server: ServerKind;
  variant: Variant;
  rollouts: number;
  seconds: number;
  completed: number;
  executions: number;
  eventsPerRollout: number;
  historyBytesPerRollout: number;
  payloadBytesPerRollout: number;
  serverErrors: number;
  /** The Temporal server's resident set before the run and at its peak, bytes. */
  serverRssBefore: number;
  serverRssPeak: number;
  /** PostgreSQL (cluster only): proportional set size at the end and data folder growth, bytes. */
  postgresPss: number | null;
  postgresDiskGrowth: number | null;
  workers: Record<string, number>;
  /** CPU seconds each process spent during the run (the bench's own: the client and the scripted policy). */
  cpu: Record<string, number>;
  /** Read from the batch workflows' histories. */
  timings: BatchTimings;
}

/** Starts a worker child and resolves once it prints `ready`. */
function startWorkerProcess(args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER_SCRIPT, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on('line', (line) => {
      if (line.trim() === 'ready') resolve(child);
    });
    child.once('exit', (code) =>
      reject(new Error(`worker ${args[0]} exited with ${code} before it was ready`)),
    );
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

async function folderBytes(path: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(path, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (entry.isFile())
      total += (await stat(join(entry.parentPath, entry.name)).catch(() => null))?.size ?? 0;
  }
  return total;
}

interface ServerHandle {
  address: string;
  pid: number;
  errorLines(): number;
  postgres: { pid: () => number | null; dataDir: string } | null;
  stop(): Promise<void>;
}

async function startServer(kind: ServerKind, dir: string): Promise<ServerHandle> {
  if (kind === 'dev') {
    const server = await startDevServerProcess(options.sqlite ? join(dir, 'temporal.db') : null);
    return {
      address: server.address,
      pid: server.process.pid as number,
      errorLines: server.errorLines,
      postgres: null,
      stop: server.stop,
    };
  }
  const cluster = await startTemporalCluster(join(dir, 'cluster'));
  return {
    address: cluster.address,
    pid: cluster.process.pid as number,
    errorLines: cluster.errorLines,
    postgres: { pid: cluster.postgresPid, dataDir: join(cluster.dir, 'postgres') },
    stop: cluster.stop,
  };
}

async function runOnce(server: ServerKind, variant: Variant, rollouts: number): Promise<RunFigures> {
  // Before the worker processes start: they inherit the key ring through the environment.
  const keys = benchPayloadKeysEnv();
  const tasks = Math.ceil(rollouts / options.samples);
  const dir = await mkdtemp(join(tmpdir(), 'openclaw-fan-out-'));
  await chmod(dir, 0o755); // PostgreSQL's user enters it
  const temporal = await startServer(server, dir);
  const policy = await startScriptedPolicy(answerRight);
  const children: ChildProcess[] = [];
  try {
    const workflowQueue = 'bench-workflows';
    const envQueue = 'bench-env';
    const storeDir = join(dir, 'store');
    const role = variant === 'empty' ? 'workflows-empty' : 'workflows';
    children.push(await startWorkerProcess([role, temporal.address, workflowQueue, storeDir]));
    children.push(await startWorkerProcess(['env', temporal.address, envQueue, storeDir]));
    const serverRssBefore = readMemory(temporal.pid)?.rss ?? 0;
    const diskBefore = temporal.postgres ? await folderBytes(temporal.postgres.dataDir) : 0;
    const cpuNow = (): Record<string, number> => ({
      server: treeCpuSeconds(temporal.pid),
      ...(temporal.postgres && { PostgreSQL: treeCpuSeconds(temporal.postgres.pid() ?? 0) }),
      'workflow worker': cpuSeconds(children[0]?.pid ?? 0),
      'env host worker': cpuSeconds(children[1]?.pid ?? 0),
      'bench and policy': process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
    });
    const cpuBefore = cpuNow();
    const sampler = sampleMemory({
      server: temporal.pid,
      'workflow worker': children[0]?.pid as number,
      'env host worker': children[1]?.pid as number,
    });
    // Encrypting like the worker processes, which inherit this run's key ring.
    const loaded = loadConfig(keys, { temporal: { address: temporal.address } });
    if (!loaded.ok) throw new Error(loaded.error);
    const connection = await connectClient(loaded.config, {});
    const client: Client = connection.client;
    const runId = `fan-out-${rollouts}-${Date.now().toString(36)}`;
    const input: AgenticTrainingInput = {
      runId,
      env: 'arith',
      taskIds: Array.from({ length: tasks }, (_, k) => `arith-${k}`),
      samplesPerTask: options.samples,
      rolloutsInFlight: options.inFlight,
      rolloutsPerBatch: options.perBatch,
      maxRetriesPerRollout: 1,
      maxTurns: 3,
      maxParseErrors: 1,
      envTaskQueue: envQueue,
      policy: { url: policy.url, sampling: { maxNewTokens: 32 } },
      training: { train: false },
      rolloutsAs: variant === 'in-batch' ? 'activities' : 'workflows',
    };
    const started = performance.now();
    const summaries = await client.workflow.execute<AgenticTrainingWorkflow>(WORKFLOW_TYPES.agenticTraining, {
      taskQueue: workflowQueue,
      workflowId: agenticWorkflowId(runId),
      args: [input],
    });
    const seconds = (performance.now() - started) / 1000;
    const cpuAfter = cpuNow();
    const cpu = Object.fromEntries(
      Object.entries(cpuAfter).map(([name, after]) => [name, after - (cpuBefore[name] ?? 0)]),
    );
    const peaks = sampler.peaks();
    sampler.stop();
    const summary = summaries[0];
    const done = summary?.rollouts ?? 0;

    // What the run left in the server: every execution's events and bytes, payloads of the tree and of a sample.
    const totals = await historyTotals(client, done);
    const treeIds = totals.ids.filter((id) => id.startsWith(agenticWorkflowId(runId)));
    const rolloutIds = totals.ids.filter((id) => !id.startsWith(agenticWorkflowId(runId)));
    let treePayload = 0;
    const timings = emptyBatchTimings();
    for (const id of treeIds) {
      const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
      treePayload += payloadBytes(events);
      if (id !== agenticWorkflowId(runId)) addBatchTimings(timings, events);
    }
    const step = Math.max(1, Math.floor(rolloutIds.length / options.sample));
    const sampled = rolloutIds.filter((_, i) => i % step === 0).slice(0, options.sample);
    let sampledPayload = 0;
    for (const id of sampled) sampledPayload += await workflowPayloadBytes(client, id);
    const perRolloutExecution = sampled.length > 0 ? sampledPayload / sampled.length : 0;
    await connection.close();

    const postgresPid = temporal.postgres?.pid() ?? null;
    return {
      server,
      variant,
      rollouts: done,
      seconds,
      completed: summary?.byStatus.COMPLETED ?? 0,
      executions: totals.executions,
      eventsPerRollout: totals.events / done,
      historyBytesPerRollout: totals.bytes / done,
      payloadBytesPerRollout: (treePayload + perRolloutExecution * rolloutIds.length) / done,
      serverErrors: temporal.errorLines(),
      serverRssBefore,
      serverRssPeak: peaks.server?.sampledRss ?? 0,
      postgresPss: postgresPid ? treePss(postgresPid) : null,
      postgresDiskGrowth: temporal.postgres
        ? (await folderBytes(temporal.postgres.dataDir)) - diskBefore
        : null,
      workers: {
        'workflow worker': peaks['workflow worker']?.hwm ?? 0,
        'env host worker': peaks['env host worker']?.hwm ?? 0,
      },
      cpu,
      timings,
    };
  } finally {
    for (const child of children) await stopProcess(child);
    await policy.close();
    await temporal.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const loadAtEnd = reportLoad('fan-out bench');
console.log(
  `in flight ${options.inFlight}, ${options.samples} samples per task, ${options.perBatch} per batch`,
);
const servers: ServerKind[] = [
  ...(options.dev ? (['dev'] as const) : []),
  ...(options.cluster ? (['cluster'] as const) : []),
];
const variants: Variant[] = [
  ...(options.empty ? (['empty'] as const) : []),
  ...(options.children ? (['rollout'] as const) : []),
  ...(options.inBatch ? (['in-batch'] as const) : []),
];
const counts = [options.small, options.large].filter((count) => count > 0);
const runs: RunFigures[] = [];
for (const server of servers) {
  for (const count of counts) {
    for (const variant of variants) {
      const figures = await runOnce(server, variant, count);
      runs.push(figures);
      console.log(
        `  ${server} ${variant}: ${figures.rollouts} rollouts (${figures.completed} completed, ${figures.executions} executions; server logged ${figures.serverErrors} errors) in ${figures.seconds.toFixed(1)} s: ` +
          `${(figures.rollouts / figures.seconds).toFixed(1)} rollouts/s (load ${load()}); per rollout ` +
          `${figures.eventsPerRollout.toFixed(1)} events, ${(figures.historyBytesPerRollout / 1024).toFixed(2)} KiB of history, ` +
          `${figures.payloadBytesPerRollout.toFixed(0)} B of payloads, ` +
          `${((figures.serverRssPeak - figures.serverRssBefore) / figures.rollouts / 1024).toFixed(1)} KiB of server RSS`,
      );
      printTimings(figures.timings);
      const cpuTotal = Object.values(figures.cpu).reduce((a, b) => a + b, 0);
      console.log(
        `    CPU per rollout: ${((cpuTotal / figures.rollouts) * 1000).toFixed(1)} ms (` +
          Object.entries(figures.cpu)
            .map(([name, secs]) => `${name} ${((secs / figures.rollouts) * 1000).toFixed(1)} ms`)
            .join(', ') +
          ')',
      );
    }
  }
}

/** Median and p90 of each span in the batch histories. */
function printTimings(t: BatchTimings): void {
  if (t.workflowTasks === 0) return;
  const spread = (values: number[]) => `${ms(median(values))} / ${ms(percentile(values, 0.9))}`;
  console.log(
    `    batch histories (median / p90): activity waits ${spread(t.activityWaitMs)}, runs ${spread(t.activityRunMs)}; ` +
      `its end to the batch's reaction ${spread(t.reactionMs)}; ${t.workflowTasks} workflow tasks ` +
      `(${(t.workflowTasks / Math.max(1, t.activityRunMs.length)).toFixed(2)} per activity) wait ${spread(t.taskWaitMs)}, ` +
      `run ${spread(t.taskRunMs)}, take in ${(t.completionsPerTask.reduce((a, b) => a + b, 0) / Math.max(1, t.completionsPerTask.length)).toFixed(2)} completions each`,
  );
}

const rate = (run: RunFigures) => run.rollouts / run.seconds;
const find = (server: ServerKind, variant: Variant, count: number) =>
  runs.find((r) => r.server === server && r.variant === variant && r.rollouts >= count * 0.99);
const perRolloutKib = (bytes: number) => `${(bytes / 1024).toFixed(2)} KiB`;

for (const server of servers) {
  const columns = counts.flatMap((count) =>
    variants.map((variant) => ({ count, variant, run: find(server, variant, count) })),
  );
  console.log(
    `\n${server === 'dev' ? 'CLI dev server (temporal server start-dev)' : 'Temporal server on PostgreSQL'}:`,
  );
  const cell = (f: (run: RunFigures) => string) => columns.map(({ run }) => (run ? f(run) : 'n/a'));
  printTable(
    ['figure', ...columns.map(({ count, variant }) => `${count.toLocaleString('en')} ${variant}`)],
    [
      ['wall time', ...cell((r) => `${r.seconds.toFixed(1)} s`)],
      ['rollouts/s', ...cell((r) => rate(r).toFixed(1))],
      [
        'ratio to the empty rollout',
        ...columns.map(({ count, run }) => {
          const empty = find(server, 'empty', count);
          return run && empty ? ratio(rate(run) / rate(empty)) : 'n/a';
        }),
      ],
      ['history events per rollout', ...cell((r) => r.eventsPerRollout.toFixed(1))],
      ['history bytes per rollout', ...cell((r) => perRolloutKib(r.historyBytesPerRollout))],
      ['payload bytes per rollout', ...cell((r) => `${r.payloadBytesPerRollout.toFixed(0)} B`)],
      [
        'server RSS growth per rollout',
        ...cell((r) => perRolloutKib((r.serverRssPeak - r.serverRssBefore) / r.rollouts)),
      ],
      ['server peak RSS', ...cell((r) => mib(r.serverRssPeak))],
      ...(server === 'cluster'
        ? [
            ['PostgreSQL PSS at the end', ...cell((r) => mib(r.postgresPss ?? 0))],
            [
              'PostgreSQL data growth per rollout',
              ...cell((r) => perRolloutKib((r.postgresDiskGrowth ?? 0) / r.rollouts)),
            ],
          ]
        : []),
      ['workflow worker peak RSS', ...cell((r) => mib(r.workers['workflow worker'] ?? 0))],
      ['env host worker peak RSS', ...cell((r) => mib(r.workers['env host worker'] ?? 0))],
    ],
  );
}

if (servers.length === 2) {
  console.log('\nSide by side, rollouts/s (ratio to the empty rollout on the same server):');
  printTable(
    ['run', 'dev server', 'Temporal server on PostgreSQL', 'PostgreSQL / dev'],
    counts.flatMap((count) =>
      variants.map((variant) => {
        const dev = find('dev', variant, count);
        const cluster = find('cluster', variant, count);
        const show = (run: RunFigures | undefined, server: ServerKind) => {
          if (!run) return 'n/a';
          const empty = find(server, 'empty', count);
          return variant !== 'empty' && empty
            ? `${rate(run).toFixed(1)} (${ratio(rate(run) / rate(empty))})`
            : rate(run).toFixed(1);
        };
        return [
          `${count.toLocaleString('en')} ${variant}`,
          show(dev, 'dev'),
          show(cluster, 'cluster'),
          dev && cluster ? ratio(rate(cluster) / rate(dev)) : 'n/a',
        ];
      }),
    ),
  );
}
loadAtEnd();
