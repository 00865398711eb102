// Deterministic sample ids (DESIGN section 4): a retried activity or a replayed workflow writes and trains
// the same sample under the same id, which is what makes "trained exactly once" checkable.

/** `<sessionId>:<turn>` for a Track 1 turn (turns are 1-based). */
export function turnSampleId(sessionId: string, turn: number): string {
  if (sessionId.length === 0) throw new Error('sessionId must not be empty');
  if (!Number.isInteger(turn) || turn < 1) throw new Error(`turn must be a positive integer, got ${turn}`);
  return `${sessionId}:${turn}`;
}

/** `<rolloutId>:<step>` for a Track 2 environment step (steps are 0-based). */
export function rolloutSampleId(rolloutId: string, step: number): string {
  if (rolloutId.length === 0) throw new Error('rolloutId must not be empty');
  if (!Number.isInteger(step) || step < 0)
    throw new Error(`step must be a non-negative integer, got ${step}`);
  return `${rolloutId}:${step}`;
}

/** Splits at the last colon, so session ids that contain colons still parse; null when malformed. */
export function parseSampleId(sampleId: string): { owner: string; index: number } | null {
  const colon = sampleId.lastIndexOf(':');
  if (colon <= 0) return null;
  const digits = sampleId.slice(colon + 1);
  if (!/^(0|[1-9][0-9]*)$/.test(digits)) return null;
  return { owner: sampleId.slice(0, colon), index: Number(digits) };
}
