// A tenant's sessions as the dashboard lists them: each turn the gateway recorded (turns/<sessionId>/…), what
// scoring made of it (its sample or exclusion, with the judge's votes and hint) and the explicit feedback it got.
// Only sessions whose id carries the caller's tenant are read, so one tenant never sees another's.

import { type ChatContentPart, flattenContent } from '../../core/chat-messages.js';
import { type FeedbackRecord, feedbackPrefix } from '../../core/feedback.js';
import { clientSessionId, tenantOfSession } from '../../core/tenant.js';
import { exclusionKey, sampleKey, type TurnRecord } from '../../core/turn-record.js';
import type { SampleStore } from '../../store/sample-store.js';
import type { StoredSampleView } from './version-stats.js';

/** Longest prompt or reply text a turn carries in the list (the page shows a preview, not the transcript). */
const PREVIEW_CHARS = 600;

export interface TurnView {
  turn: number;
  sampleId: string;
  recordedAt: string;
  policyVersion: number;
  prompt: string;
  reply: string;
  outcome:
    | { status: 'sample'; reward: number | null; kind: string | null }
    | { status: 'excluded'; reason: string; detail: string }
    | { status: 'pending' };
  votes: (number | null)[];
  hint: string | null;
  feedback: { rating: number | null; correction: string | null; receivedAt: string }[];
}

export interface SessionView {
  /** The id the client sent (without its tenant). */
  sessionId: string;
  lastTurnAt: string;
  turns: TurnView[];
}

type StoredOutcome = StoredSampleView & { reason?: string; detail?: string };

export async function tenantSessions(
  store: SampleStore,
  tenant: string,
  limits: { sessions: number; turns: number },
): Promise<SessionView[]> {
  const bySession = new Map<string, string[]>();
  for (const key of await store.list('turns')) {
    const [, encoded] = key.split('/');
    if (encoded === undefined) continue;
    const sessionId = decodeURIComponent(encoded);
    if (tenantOfSession(sessionId) !== tenant) continue;
    const keys = bySession.get(sessionId) ?? [];
    keys.push(key);
    bySession.set(sessionId, keys);
  }
  const sessions: SessionView[] = [];
  for (const [sessionId, keys] of bySession) {
    const turns: TurnView[] = [];
    for (const key of keys) {
      const record = await store.get<TurnRecord>(key);
      if (record?.sampleId) turns.push(await turnView(store, record));
    }
    turns.sort((a, b) => a.turn - b.turn || (a.recordedAt < b.recordedAt ? -1 : 1));
    // ISO times: the greatest string is the latest.
    const lastTurnAt =
      turns
        .map((t) => t.recordedAt)
        .sort()
        .at(-1) ?? '';
    sessions.push({
      sessionId: clientSessionId(sessionId) ?? sessionId,
      lastTurnAt,
      turns: turns.slice(-limits.turns),
    });
  }
  return sessions.sort((a, b) => (a.lastTurnAt < b.lastTurnAt ? 1 : -1)).slice(0, limits.sessions);
}

async function turnView(store: SampleStore, record: TurnRecord): Promise<TurnView> {
  const sample = await store.get<StoredOutcome>(sampleKey(record.sampleId));
  const exclusion = sample ? undefined : await store.get<StoredOutcome>(exclusionKey(record.sampleId));
  const judged = sample ?? exclusion;
  const feedback: TurnView['feedback'] = [];
  for (const key of await store.list(feedbackPrefix(record.sampleId))) {
    const item = await store.get<FeedbackRecord>(key);
    if (item)
      feedback.push({ rating: item.rating, correction: item.correction, receivedAt: item.receivedAt });
  }
  feedback.sort((a, b) => (a.receivedAt < b.receivedAt ? -1 : 1));
  const lastUser = [...(record.messages ?? [])].reverse().find((message) => message.role === 'user');
  return {
    turn: record.turn,
    sampleId: clientSessionId(record.sampleId) ?? record.sampleId,
    recordedAt: record.recordedAt,
    policyVersion: record.policyVersion,
    prompt: flattenContent(lastUser?.content, imageMarker).slice(0, PREVIEW_CHARS),
    reply: (record.response?.content ?? '').slice(0, PREVIEW_CHARS),
    outcome: sample
      ? { status: 'sample', reward: sample.reward ?? null, kind: sample.kind ?? null }
      : exclusion
        ? { status: 'excluded', reason: exclusion.reason ?? 'unknown', detail: exclusion.detail ?? '' }
        : { status: 'pending' },
    votes: judged?.judge?.evalVotes ?? [],
    hint: judged?.judge?.hint ?? null,
    feedback,
  };
}

/** An image of a prompt, shown by its short digest (the bytes stay in the store). */
function imageMarker(part: ChatContentPart): string {
  const digest = typeof part.digest === 'string' ? part.digest.slice(0, 'sha256:'.length + 8) : '';
  return `[image ${digest}]`;
}
