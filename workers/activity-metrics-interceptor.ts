// Times every activity a worker runs, by type, task queue and outcome, into the process's WorkerMetrics.
// An activity inbound interceptor sees each attempt from its first line to its result, whichever activity
// factory made it, so no activity needs to know about metrics.

import { CancelledFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { ActivityOutcome, WorkerMetrics } from './worker-metrics.js';

export function activityMetricsInterceptor(metrics: WorkerMetrics): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const { activityType, taskQueue } = ctx.info;
        const started = performance.now();
        let outcome: ActivityOutcome = 'failed';
        try {
          const result = await next(input);
          outcome = 'completed';
          return result;
        } catch (error) {
          if (error instanceof CancelledFailure || ctx.cancellationSignal.aborted) outcome = 'cancelled';
          throw error;
        } finally {
          metrics.observeActivity(activityType, taskQueue, outcome, (performance.now() - started) / 1000);
        }
      },
    },
  });
}
