// Finds recorded turns in the sample store the way a test that only talks HTTP to the gateway can: by session,
// position and the reply the client received (a turn's id is a digest of what was said, which a client does
// not see).

import { parseTurnSampleId } from '../../core/sample-id.js';
import { sessionTurnsPrefix, type TurnRecord } from '../../core/turn-record.js';
import { FileSampleStore, type SampleStore } from '../../store/sample-store.js';

/**
 * Every turn record of a session, oldest first. A gateway's journaled turns are in the files a few milliseconds
 * after their answer: waited for.
 */
export async function recordedTurns(store: SampleStore, sessionId: string): Promise<TurnRecord[]> {
  if (store instanceof FileSampleStore) await store.journaledWritten();
  const records: TurnRecord[] = [];
  for (const key of await store.list(sessionTurnsPrefix(sessionId))) {
    const record = await store.get<TurnRecord>(key);
    if (record) records.push(record);
  }
  return records.sort((a, b) => (a.recordedAt < b.recordedAt ? -1 : a.recordedAt > b.recordedAt ? 1 : 0));
}

/** The latest turn of a session at `position` (1 + assistant messages sent) whose reply was `content`. */
export async function findRecordedTurn(
  store: SampleStore,
  sessionId: string,
  position: number,
  content?: string,
): Promise<TurnRecord | undefined> {
  return latestTurnAt(await recordedTurns(store, sessionId), position, content);
}

/** The latest of `records` (oldest first) at `position` whose reply was `content`. */
export function latestTurnAt(
  records: TurnRecord[],
  position: number,
  content?: string,
): TurnRecord | undefined {
  const matching = records.filter(
    (record) =>
      parseTurnSampleId(record.sampleId)?.turn === position &&
      (content === undefined || record.response.content === content),
  );
  return matching.at(-1);
}
