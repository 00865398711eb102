// Polls Temporal for the approximate backlog of the task queues a worker serves (describeTaskQueue with
// stats), so a dashboard shows work waiting for workers that are too few or stuck. A failed poll leaves the
// last figures and is retried at the next interval: Temporal being away must not stop the worker.

import proto from '@temporalio/proto';
import type { WorkerMetrics } from './worker-metrics.js';

// A CommonJS module: its namespace comes through the default export under Node's ESM loader.
const { temporal } = proto;

type WorkflowService = {
  describeTaskQueue(
    request: proto.temporal.api.workflowservice.v1.IDescribeTaskQueueRequest,
  ): Promise<proto.temporal.api.workflowservice.v1.IDescribeTaskQueueResponse>;
};

const TASK_TYPES = [
  ['workflow', temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW],
  ['activity', temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY],
] as const;

export interface BacklogPoller {
  /** One poll of every queue now (the interval polls too); resolves when the figures are set. */
  poll(): Promise<void>;
  stop(): void;
}

export function pollTaskQueueBacklog(options: {
  service: WorkflowService;
  namespace: string;
  taskQueues: readonly string[];
  metrics: WorkerMetrics;
  intervalMs?: number;
}): BacklogPoller {
  const { service, namespace, taskQueues, metrics } = options;
  const poll = async () => {
    await Promise.all(
      taskQueues.flatMap((name) =>
        TASK_TYPES.map(async ([label, taskQueueType]) => {
          try {
            const response = await service.describeTaskQueue({
              namespace,
              taskQueue: { name, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
              taskQueueType,
              reportStats: true,
            });
            const backlog = response.stats?.approximateBacklogCount;
            if (backlog !== undefined && backlog !== null)
              metrics.taskQueueBacklog.set({ task_queue: name, task_type: label }, Number(backlog));
          } catch {
            // Kept as it was; the next poll tries again.
          }
        }),
      ),
    );
  };
  let polling: Promise<void> | null = null;
  const tick = () => {
    polling ??= poll().finally(() => {
      polling = null;
    });
    return polling;
  };
  void tick();
  const timer = setInterval(() => void tick(), options.intervalMs ?? 5_000);
  timer.unref();
  return { poll: () => poll(), stop: () => clearInterval(timer) };
}
