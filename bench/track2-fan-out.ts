// Container-free fan-out at scale: one agentic training step (no training) of the `arith` environment with a
// scripted policy, at two rollout counts, each against a fresh `temporal server start-dev` (SQLite in a temp
// folder) and fresh worker processes (the workflow worker and one env host), all children of this process so
// their memory can be read from /proc. Prints rollouts per second and peak memory per process, and how both
// grow from the small count to the large one.
//   npm run bench:fan-out -- [--small 1000] [--large 10000] [--inFlight 200] [--samples 4] [--sqlite 0|1]

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { startScriptedPolicy } from '../test/support/scripted-policy-server.js';
import {
  type AgenticTrainingInput,
  agenticWorkflowId,
  type StepSummary,
} from '../workflows/agentic-signals.js';
import { startDevServerProcess } from './support/dev-server-process.js';
import { answerRight } from './support/numbered-arith.js';
import { mib, sampleMemory } from './support/process-memory.js';
import { intOptions, printTable, ratio } from './support/stats.js';

const options = intOptions(
  { small: 1000, large: 10_000, inFlight: 200, samples: 4, perBatch: 250, sqlite: 0 },
  'npx tsx bench/track2-fan-out.ts: arith rollouts through a fresh Temporal dev server and worker processes',
);

const WORKER_SCRIPT = fileURLToPath(new URL('./support/fan-out-worker.ts', import.meta.url));

interface RunFigures {
  rollouts: number;
  seconds: number;
  completed: number;
  serverErrors: number;
  memory: Record<string, { sampledRss: number; hwm: number }>;
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

async function runOnce(rollouts: number): Promise<RunFigures> {
  const tasks = Math.ceil(rollouts / options.samples);
  const dir = await mkdtemp(join(tmpdir(), 'openclaw-fan-out-'));
  const server = await startDevServerProcess(options.sqlite ? join(dir, 'temporal.db') : null);
  const address = server.address;
  const policy = await startScriptedPolicy(answerRight);
  const children: ChildProcess[] = [];
  try {
    const workflowQueue = 'bench-workflows';
    const envQueue = 'bench-env';
    const storeDir = join(dir, 'store');
    children.push(await startWorkerProcess(['workflows', address, workflowQueue, storeDir]));
    children.push(await startWorkerProcess(['env', address, envQueue, storeDir]));
    const sampler = sampleMemory({
      'temporal dev server': server.process.pid as number,
      'workflow worker': children[0]?.pid as number,
      'env host worker': children[1]?.pid as number,
    });
    const connection = await Connection.connect({ address });
    const client = new Client({ connection });
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
    };
    const started = performance.now();
    const summaries = (await client.workflow.execute('agenticTrainingWorkflow', {
      taskQueue: workflowQueue,
      workflowId: agenticWorkflowId(runId),
      args: [input],
    })) as StepSummary[];
    const seconds = (performance.now() - started) / 1000;
    const memory = sampler.peaks();
    sampler.stop();
    await connection.close();
    const summary = summaries[0];
    return {
      rollouts: summary?.rollouts ?? 0,
      seconds,
      completed: summary?.byStatus.COMPLETED ?? 0,
      serverErrors: server.errorLines(),
      memory,
    };
  } finally {
    for (const child of children) await stopProcess(child);
    await policy.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

console.log(
  `fan-out bench: ${cpus().length} cores, load average at start ${loadavg()
    .map((l) => l.toFixed(2))
    .join(
      ' ',
    )}; in flight ${options.inFlight}, ${options.samples} samples per task, ${options.perBatch} per batch`,
);
const runs: RunFigures[] = [];
for (const count of [options.small, options.large]) {
  const figures = await runOnce(count);
  runs.push(figures);
  console.log(
    `  ${figures.rollouts} rollouts (${figures.completed} completed; dev server logged ${figures.serverErrors} errors) in ${figures.seconds.toFixed(1)} s: ` +
      `${(figures.rollouts / figures.seconds).toFixed(1)} rollouts/s`,
  );
}
const [small, large] = runs as [RunFigures, RunFigures];
const rate = (run: RunFigures) => run.rollouts / run.seconds;
console.log('');
printTable(
  ['figure', `${small.rollouts} rollouts`, `${large.rollouts} rollouts`, 'ratio large/small'],
  [
    [
      'wall time',
      `${small.seconds.toFixed(1)} s`,
      `${large.seconds.toFixed(1)} s`,
      ratio(large.seconds / small.seconds),
    ],
    ['rollouts/s', rate(small).toFixed(1), rate(large).toFixed(1), ratio(rate(large) / rate(small))],
    ...Object.keys(small.memory).flatMap((name) => {
      const a = small.memory[name] ?? { sampledRss: 0, hwm: 0 };
      const b = large.memory[name] ?? { sampledRss: 0, hwm: 0 };
      return [
        [`${name} peak RSS (VmHWM)`, mib(a.hwm), mib(b.hwm), ratio(b.hwm / a.hwm)],
        [
          `${name} peak sampled VmRSS`,
          mib(a.sampledRss),
          mib(b.sampledRss),
          ratio(b.sampledRss / a.sampledRss),
        ],
      ];
    }),
  ],
);
console.log(
  `load average at end ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
