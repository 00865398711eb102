// Deterministic sample ids (DESIGN section 4): a retried activity or a replayed workflow writes and trains
// the same sample under the same id, which is what makes "trained exactly once" checkable.

/** Hex digits of a turn's digest in its sample id (64 bits: siblings of one session never collide). */
export const TURN_DIGEST_LENGTH = 16;

const TURN_KEY = /^([1-9][0-9]*)(?:-([0-9a-f]{16}))?$/;

/**
 * `<sessionId>:<turn>-<digest>` for a Track 1 turn: its position in the conversation (1-based, for people) and
 * a digest of its request prefix and response (its identity), so the id is a pure function of what was said.
 * Two gateways recording the same request and response agree on it without talking to each other, and two
 * different responses to one request (a retry, a regenerate) get two ids. Without a digest:
 * `<sessionId>:<turn>`, the form of records written when turns were numbered.
 */
export function turnSampleId(sessionId: string, turn: number, digest?: string): string {
  if (sessionId.length === 0) throw new Error('sessionId must not be empty');
  if (!Number.isInteger(turn) || turn < 1) throw new Error(`turn must be a positive integer, got ${turn}`);
  if (digest === undefined) return `${sessionId}:${turn}`;
  if (!new RegExp(`^[0-9a-f]{${TURN_DIGEST_LENGTH}}$`).test(digest))
    throw new Error(`turn digest must be ${TURN_DIGEST_LENGTH} lowercase hex digits, got ${digest}`);
  return `${sessionId}:${turn}-${digest}`;
}

/** A Track 1 sample id's parts (either form); null when malformed. Session ids may contain colons. */
export function parseTurnSampleId(
  sampleId: string,
): { sessionId: string; turn: number; turnKey: string } | null {
  const colon = sampleId.lastIndexOf(':');
  if (colon <= 0) return null;
  const turnKey = sampleId.slice(colon + 1);
  const match = TURN_KEY.exec(turnKey);
  if (!match) return null;
  return { sessionId: sampleId.slice(0, colon), turn: Number(match[1]), turnKey };
}

/** `<rolloutId>:<step>` for a Track 2 environment step (steps are 0-based). */
export function rolloutSampleId(rolloutId: string, step: number): string {
  if (rolloutId.length === 0) throw new Error('rolloutId must not be empty');
  if (!Number.isInteger(step) || step < 0)
    throw new Error(`step must be a non-negative integer, got ${step}`);
  return `${rolloutId}:${step}`;
}
