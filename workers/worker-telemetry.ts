// What a worker process adds to its workers for observability: the `/metrics` endpoint with activity
// timings, queue backlogs and container counts (worker-metrics.ts), and, when tracing is configured, the
// OpenTelemetry plugin that carries a trace through workflows and activities (temporal/tracing.ts).

import type { WorkerOptions } from '@temporalio/worker';
import type { OpenClawConfig } from '../core/config.js';
import { type ProcessTracing, startProcessTracing } from '../temporal/tracing.js';
import { activityMetricsInterceptor } from './activity-metrics-interceptor.js';
import { pollTaskQueueBacklog } from './task-queue-backlog.js';
import {
  METRICS_PORT_DEFAULTS,
  type MetricsEndpoint,
  serveMetrics,
  WorkerMetrics,
  type WorkerProcess,
} from './worker-metrics.js';

type DescribeService = Parameters<typeof pollTaskQueueBacklog>[0]['service'];

export interface WorkerTelemetry {
  metrics: WorkerMetrics;
  /** The endpoint, or null when `metrics.port` is 0 or the port was taken. */
  endpoint: MetricsEndpoint | null;
  tracing: ProcessTracing | null;
  /** Options for each Worker.create of this process (merge with its own). */
  workerOptions: Pick<WorkerOptions, 'interceptors' | 'plugins'>;
  /** Polls the backlog of `taskQueues` every few seconds until `close`. */
  watchTaskQueues(service: DescribeService, namespace: string, taskQueues: readonly string[]): void;
  close(): Promise<void>;
}

export async function startWorkerTelemetry(
  config: OpenClawConfig,
  process: WorkerProcess,
  options: { runningContainers?: () => number; log?: (line: string) => void } = {},
): Promise<WorkerTelemetry> {
  const log = options.log ?? ((line: string) => console.error(line));
  const metrics = new WorkerMetrics(process, {
    ...(options.runningContainers && { runningContainers: options.runningContainers }),
  });
  const port = config.metrics.port ?? METRICS_PORT_DEFAULTS[process];
  let endpoint: MetricsEndpoint | null = null;
  if (port > 0) {
    try {
      endpoint = await serveMetrics(metrics.registry, port, config.metrics.host);
      log(`metrics ${endpoint.url}`);
    } catch (error) {
      // Metrics are for watching: a taken port must not keep the worker from working.
      log(`metrics: not served on ${config.metrics.host}:${port}: ${(error as Error).message}`);
    }
  }
  const tracing = startProcessTracing(config, `openclaw-${process}-worker`);
  const pollers: Array<{ stop(): void }> = [];
  return {
    metrics,
    endpoint,
    tracing,
    workerOptions: {
      interceptors: { activity: [activityMetricsInterceptor(metrics)] },
      ...(tracing && { plugins: [tracing.plugin] }),
    },
    watchTaskQueues(service, namespace, taskQueues) {
      pollers.push(pollTaskQueueBacklog({ service, namespace, taskQueues, metrics }));
    },
    async close() {
      for (const poller of pollers) poller.stop();
      await endpoint?.close();
      await tracing?.shutdown();
    },
  };
}
