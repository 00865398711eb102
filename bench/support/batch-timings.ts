// Where a rollout's time goes inside its batch workflow, read from the batch histories (the server's clock):
// the activity waiting for an env worker (scheduled → started), running (started → completed), and the batch
// reacting to its end (completed → the workflow task that took it in completed, which also schedules the
// next rollout), and the workflow tasks themselves (waiting for a workflow worker, running on it), with how
// many activity completions one workflow task takes in.

import type { HistoryEvent } from './history.js';
import { activitySpans, eventId, eventMs } from './history.js';

export interface BatchTimings {
  activityWaitMs: number[];
  activityRunMs: number[];
  reactionMs: number[];
  taskWaitMs: number[];
  taskRunMs: number[];
  /** Activity completions taken in per workflow task that took in at least one. */
  completionsPerTask: number[];
  workflowTasks: number;
}

export function emptyBatchTimings(): BatchTimings {
  return {
    activityWaitMs: [],
    activityRunMs: [],
    reactionMs: [],
    taskWaitMs: [],
    taskRunMs: [],
    completionsPerTask: [],
    workflowTasks: 0,
  };
}

/** Adds one batch history's figures to `into`. */
export function addBatchTimings(into: BatchTimings, events: readonly HistoryEvent[]): void {
  for (const span of activitySpans(events)) {
    into.activityWaitMs.push(span.startedMs - span.scheduledMs);
    into.activityRunMs.push(span.completedMs - span.startedMs);
  }
  const scheduledAt = new Map<number, number>();
  const startedAt = new Map<number, number>();
  // Completions recorded before a workflow task started are the ones it took in (later ones are buffered
  // behind its completion in the history).
  let pending: number[] = [];
  let taken: number[] = [];
  for (const event of events) {
    const ms = eventMs(event);
    if (event.workflowTaskScheduledEventAttributes) scheduledAt.set(eventId(event), ms);
    else if (event.workflowTaskStartedEventAttributes) {
      startedAt.set(eventId(event), ms);
      const scheduled = scheduledAt.get(Number(event.workflowTaskStartedEventAttributes.scheduledEventId));
      if (scheduled !== undefined) into.taskWaitMs.push(ms - scheduled);
      taken = pending;
      pending = [];
    } else if (event.activityTaskCompletedEventAttributes) pending.push(ms);
    else if (event.workflowTaskCompletedEventAttributes) {
      into.workflowTasks++;
      const started = startedAt.get(Number(event.workflowTaskCompletedEventAttributes.startedEventId));
      if (started !== undefined) into.taskRunMs.push(ms - started);
      if (taken.length > 0) into.completionsPerTask.push(taken.length);
      for (const at of taken) into.reactionMs.push(ms - at);
      taken = [];
    }
  }
}
