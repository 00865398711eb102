// Reading timings out of workflow histories: event times (the Temporal server's clock) and activity spans.

import type { Client } from '@temporalio/client';

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;
export type HistoryEvent = NonNullable<History['events']>[number];

type LongLike = number | string | { toNumber(): number } | null | undefined;

function toNumber(value: LongLike): number {
  if (value === null || value === undefined) return 0;
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return Number(value);
  return value.toNumber();
}

/** The event's time in milliseconds since the epoch (fractional: histories keep nanoseconds). */
export function eventMs(event: HistoryEvent): number {
  const time = event.eventTime;
  return toNumber(time?.seconds as LongLike) * 1000 + (time?.nanos ?? 0) / 1e6;
}

export function eventId(event: HistoryEvent): number {
  return toNumber(event.eventId as LongLike);
}

export interface ActivitySpan {
  name: string;
  scheduledMs: number;
  startedMs: number;
  completedMs: number;
}

/** Every completed activity of a history, in the order it was scheduled. */
export function activitySpans(events: readonly HistoryEvent[]): ActivitySpan[] {
  const byScheduled = new Map<number, Partial<ActivitySpan> & { name: string }>();
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) {
      byScheduled.set(eventId(event), {
        name: scheduled.activityType?.name ?? '?',
        scheduledMs: eventMs(event),
      });
      continue;
    }
    const started = event.activityTaskStartedEventAttributes;
    if (started) {
      const span = byScheduled.get(toNumber(started.scheduledEventId as LongLike));
      if (span) span.startedMs = eventMs(event);
      continue;
    }
    const completed = event.activityTaskCompletedEventAttributes;
    if (completed) {
      const span = byScheduled.get(toNumber(completed.scheduledEventId as LongLike));
      if (span) span.completedMs = eventMs(event);
    }
  }
  return [...byScheduled.values()].filter(
    (s): s is ActivitySpan =>
      s.scheduledMs !== undefined && s.startedMs !== undefined && s.completedMs !== undefined,
  );
}

/** The events of a workflow and of every run it continued-as-new into, oldest run first. */
export async function historyChain(
  client: Client,
  workflowId: string,
  firstRunId: string,
): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  let runId: string | null | undefined = firstRunId;
  while (runId) {
    const history: History = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events: HistoryEvent[] = history.events ?? [];
    runs.push(events);
    const continued = events.find((e) => e.workflowExecutionContinuedAsNewEventAttributes);
    runId = continued?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  }
  return runs;
}

/**
 * For each `turnRecorded` signal of a session history: when the server accepted it, and when the workflow
 * task that took it in completed (the session workflow had the turn).
 */
export function signalDeliveries(
  events: readonly HistoryEvent[],
): { signaledMs: number; handledMs: number }[] {
  const out: { signaledMs: number; handledMs: number }[] = [];
  const pending: number[] = [];
  let taskStarted = false;
  const taken: number[] = [];
  for (const event of events) {
    if (event.workflowExecutionSignaledEventAttributes?.signalName === 'turnRecorded') {
      pending.push(eventMs(event));
    } else if (event.workflowTaskStartedEventAttributes) {
      // Signals recorded before a workflow task starts are delivered in that task.
      taken.push(...pending.splice(0));
      taskStarted = true;
    } else if (event.workflowTaskCompletedEventAttributes && taskStarted) {
      for (const signaledMs of taken.splice(0)) out.push({ signaledMs, handledMs: eventMs(event) });
      taskStarted = false;
    }
  }
  return out;
}
