// A worker process the fan-out benchmark starts as a child, so its memory can be read from /proc: either the
// workflow worker (the control worker's role: agentic and batch workflows, no activities), the same with the
// empty rollout of the baseline (`workflows-empty`), or an env host serving the container-free `arith` kind.
// Prints `ready` once polling; stops on SIGTERM.
//   node --import tsx bench/support/fan-out-worker.ts <workflows|workflows-empty|env> <address> <queue> <storeDir>

import { fileURLToPath } from 'node:url';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { loadConfig } from '../../core/config.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { connectWorker } from '../../temporal/connection.js';
import { NumberedArith } from '../../test/support/numbered-arith.js';
import { workflowsPath } from '../../workers/control-worker.js';
import { createEnvWorkers } from '../../workers/env-worker.js';
import { benchPayloadKeysEnv } from './payload-keys.js';

const [role, address, queue, storeDir] = process.argv.slice(2);
const EMPTY_ROLLOUT_WORKFLOWS = fileURLToPath(new URL('./empty-rollout-workflows.ts', import.meta.url));
if (!['workflows', 'workflows-empty', 'env'].includes(role ?? '') || !address || !queue || !storeDir) {
  console.error('usage: fan-out-worker.ts <workflows|workflows-empty|env> <address> <queue> <storeDir>');
  process.exit(2);
}

Runtime.install({ logger: new DefaultLogger('ERROR') });
// The parent's key ring (inherited through the environment): payloads encrypted as by default.
const loaded = loadConfig(benchPayloadKeysEnv(), { temporal: { address } });
if (!loaded.ok) throw new Error(loaded.error);
const connection = await connectWorker(loaded.config, {});
let run: Promise<unknown>;
let shutdown: () => void;
if (role !== 'env') {
  const worker = await Worker.create({
    connection,
    taskQueue: queue,
    workflowsPath: role === 'workflows-empty' ? EMPTY_ROLLOUT_WORKFLOWS : workflowsPath,
    maxConcurrentWorkflowTaskExecutions: 100,
    maxCachedWorkflows: 1000,
  });
  run = worker.run();
  shutdown = () => worker.shutdown();
} else {
  const workers = await createEnvWorkers({
    connection,
    hostId: `bench-${process.pid}`,
    provider: null,
    registry: new Map([['arith', new NumberedArith()]]),
    store: new FileSampleStore(storeDir),
    sharedTaskQueue: queue,
    reapIntervalMs: 0,
    sharedWorkerOptions: { maxConcurrentActivityTaskExecutions: 400 },
    hostWorkerOptions: { maxConcurrentActivityTaskExecutions: 400 },
  });
  run = workers.run();
  shutdown = () => workers.shutdown();
}
process.once('SIGTERM', () => shutdown());
console.log('ready');
await run;
await connection.close();
