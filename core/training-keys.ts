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
