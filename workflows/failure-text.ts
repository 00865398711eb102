// How a failure reads in a rollout's result: its message and its causes', outermost first.

/** The messages of a failure and its causes, outermost first ("Activity task failed: ..."). */
export function describeFailure(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  while (current instanceof Error && parts.length < 5) {
    if (current.message && !parts.includes(current.message)) parts.push(current.message);
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(': ') || String(error);
}
