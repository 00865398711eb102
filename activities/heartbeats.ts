import { Context } from '@temporalio/activity';

/**
 * Heartbeats while `work` runs, three times per heartbeat timeout, so the server notices a dead worker
 * within one timeout and retries the activity elsewhere, instead of waiting out its start-to-close timeout.
 * Outside an activity (a unit test) it just runs `work`.
 */
export async function withHeartbeats<T>(detail: string, work: () => Promise<T>): Promise<T> {
  let context: Context | undefined;
  try {
    context = Context.current();
  } catch {
    return work();
  }
  const timeoutMs = context.info.heartbeatTimeoutMs;
  if (!timeoutMs) return work();
  const timer = setInterval(() => context?.heartbeat(detail), Math.max(200, Math.floor(timeoutMs / 3)));
  try {
    context.heartbeat(detail);
    return await work();
  } finally {
    clearInterval(timer);
  }
}
