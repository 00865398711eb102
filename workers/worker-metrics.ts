// Prometheus metrics of one worker process (control, trainer, env or gpu), in a registry of its own, and the
// `/metrics` endpoint that serves them. The activity interceptor (activity-metrics-interceptor.ts) times every
// activity; the backlog poller (task-queue-backlog.ts) reads each queue's approximate backlog from Temporal.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export const WORKER_PROCESSES = ['control', 'trainer', 'env', 'gpu'] as const;
export type WorkerProcess = (typeof WORKER_PROCESSES)[number];

/** Each worker process's port when `metrics.port` is unset: one machine can run all four side by side. */
export const METRICS_PORT_DEFAULTS: Record<WorkerProcess, number> = {
  control: 9464,
  trainer: 9465,
  env: 9466,
  gpu: 9467,
};

export type ActivityOutcome = 'completed' | 'failed' | 'cancelled';

/** Activities whose timings are also training figures. */
const TRAINING_TIMINGS: Record<string, 'trainStep' | 'publish' | undefined> = {
  trainStep: 'trainStep',
  publishWeights: 'publish',
};

export class WorkerMetrics {
  readonly registry = new Registry();

  readonly activityDuration = new Histogram({
    name: 'openclaw_worker_activity_duration_seconds',
    help: 'Activity executions on this worker, from start to result, by activity type, task queue and outcome.',
    labelNames: ['activity_type', 'task_queue', 'outcome'] as const,
    buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600],
    registers: [this.registry],
  });

  readonly taskQueueBacklog = new Gauge({
    name: 'openclaw_worker_task_queue_backlog',
    help: "Approximate backlog of a task queue this worker polls (Temporal's describeTaskQueue), by task type.",
    labelNames: ['task_queue', 'task_type'] as const,
    registers: [this.registry],
  });

  readonly trainStepSeconds = new Histogram({
    name: 'openclaw_training_step_seconds',
    help: 'Completed trainStep activities: one training step, samples loaded to result.',
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600],
    registers: [this.registry],
  });

  readonly publishSeconds = new Histogram({
    name: 'openclaw_training_publish_seconds',
    help: 'Completed publishWeights activities: a new version loaded into the serving engine.',
    buckets: [0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });

  readonly runningContainers: Gauge<'process'>;

  constructor(
    readonly process: WorkerProcess,
    options: { processMetrics?: boolean; runningContainers?: () => number } = {},
  ) {
    this.registry.setDefaultLabels({ worker: process });
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    const count = options.runningContainers;
    this.runningContainers = new Gauge({
      name: 'openclaw_worker_running_containers',
      help: 'Containers this worker runs: sandboxes held for rollouts (env), the policy engine (gpu).',
      labelNames: ['process'] as const,
      registers: count ? [this.registry] : [],
      collect() {
        if (count) this.set({ process }, count());
      },
    });
  }

  /** One activity's end; training activities also feed the step and publish histograms when they completed. */
  observeActivity(activityType: string, taskQueue: string, outcome: ActivityOutcome, seconds: number): void {
    this.activityDuration.observe({ activity_type: activityType, task_queue: taskQueue, outcome }, seconds);
    if (outcome !== 'completed') return;
    const timing = TRAINING_TIMINGS[activityType];
    if (timing === 'trainStep') this.trainStepSeconds.observe(seconds);
    else if (timing === 'publish') this.publishSeconds.observe(seconds);
  }
}

export interface MetricsEndpoint {
  url: string;
  close(): Promise<void>;
}

/** Serves `registry` at `GET /metrics` (anything else is 404) on `host:port`; port 0 picks a free one. */
export async function serveMetrics(
  registry: Registry,
  port: number,
  host = '0.0.0.0',
): Promise<MetricsEndpoint> {
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    url: `http://${shown.includes(':') ? `[${shown}]` : shown}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
