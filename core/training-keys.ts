// Sample-store keys of a training run's own records (pure: the workflow names its backlog chunks itself).
// Parts are URI-encoded like every store key (store/sample-store.ts `storeKey`).

const key = (...parts: (string | number)[]): string =>
  parts.map((part) => encodeURIComponent(String(part))).join('/');

/** Which incarnation of a run id is current (the engine launcher serves only its weights). */
export function runRecordKey(runId: string): string {
  return key('runs', runId);
}

/** Lineage of a published version; without an incarnation, the layout of runs from before incarnations. */
export function lineageKey(runId: string, version: number, incarnation?: string): string {
  return incarnation === undefined
    ? key('lineage', runId, `v${version}`)
    : key('lineage', runId, incarnation, `v${version}`);
}

/** A chunk of waiting sample references spilled out of the training run's history. */
export function backlogKey(runId: string, incarnation: string, seq: number): string {
  return key('training', runId, incarnation, 'backlog', seq);
}

/** The publish gate's decision on a step (written first thing after it is computed: a retry returns it). */
export function gateDecisionKey(stepId: string): string {
  return key('gate', 'decision', stepId);
}

/**
 * A version's score on an evaluation (`evaluation`: a hash of the set's text and the gate's scoring settings),
 * so a changed set or scorer is evaluated anew instead of compared with another evaluation's score.
 */
export function gateScoreKey(
  runId: string,
  incarnation: string | undefined,
  version: number,
  evaluation: string,
): string {
  return key('gate', 'score', runId, incarnation ?? '-', `v${version}`, evaluation);
}

/** A rollback's outcome under its request id: an update retried returns it instead of rolling back twice. */
export function rollbackKey(runId: string, requestId: string): string {
  return key('gate', 'rollback', runId, requestId);
}
