// Which incarnation of a run id is current (`runs/<runId>`), the ones before it, and since when each one's
// weights were served: enough to say, for a turn recorded at a given time, whose weights served it. A run id
// started again numbers its versions from 0 again, so a version number alone does not name a policy.

/** One incarnation of a run id, as the run record keeps it. */
export interface IncarnationRecord {
  incarnation: string;
  /** ISO time the incarnation began (its first workflow task). */
  startedAt: string;
  /** ISO time its first version was published to serving; absent while the engine serves what was there. */
  servingFrom?: string;
}

/** The record of which incarnation of a run id is current (read by the engine launcher and by scoring). */
export interface RunRecord extends IncarnationRecord {
  runId: string;
  /** The incarnations before the current one, newest first (at most EARLIER_KEPT). */
  earlier?: IncarnationRecord[];
}

export const EARLIER_KEPT = 20;

/** The record once `incarnation` begins at `startedAt`: the current one, if another, moves to `earlier`. */
export function beginIncarnationRecord(
  current: RunRecord | undefined,
  runId: string,
  incarnation: string,
  startedAt: string,
): RunRecord {
  if (current?.incarnation === incarnation) return current;
  const earlier = current
    ? [
        {
          incarnation: current.incarnation,
          startedAt: current.startedAt,
          ...(current.servingFrom !== undefined && { servingFrom: current.servingFrom }),
        },
        ...(current.earlier ?? []),
      ].slice(0, EARLIER_KEPT)
    : [];
  return { runId, incarnation, startedAt, ...(earlier.length > 0 && { earlier }) };
}

/**
 * The incarnation whose weights the engine served at `recordedAt`: the newest one that had published by
 * then. Undefined when none had (the engine served the base model, or the record is unknown).
 */
export function servingIncarnationAt(record: RunRecord | undefined, recordedAt: string): string | undefined {
  if (record === undefined) return undefined;
  const at = Date.parse(recordedAt);
  if (!Number.isFinite(at)) return undefined;
  for (const entry of [record, ...(record.earlier ?? [])])
    if (entry.servingFrom !== undefined && Date.parse(entry.servingFrom) <= at) return entry.incarnation;
  return undefined;
}
