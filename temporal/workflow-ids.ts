// Workflow ids: deterministic, so a second start or signal-with-start finds the workflow the first one made.

/** One session workflow per (tenant-scoped) session id. */
export function sessionWorkflowId(sessionId: string): string {
  return `session-${sessionId}`;
}

/** One scoring workflow per turn: a second delivery of the same turn cannot score it twice. */
export function scoreTurnWorkflowId(sampleId: string): string {
  return `score-${sampleId}`;
}

export function trainingWorkflowId(runId: string): string {
  return `training-${runId}`;
}

export function agenticWorkflowId(runId: string): string {
  return `agentic-${runId}`;
}

export function envRolloutWorkflowId(rolloutId: string): string {
  return `rollout-${rolloutId}`;
}
