// Records main turns in the sample store, each with its outbox entry, and returns as soon as both are durable:
// the relay (outbox-relay.ts) hands the turn to its session workflow whenever Temporal can take it, so serving
// never waits on Temporal. Turn numbers come from the store, not from memory, so several gateways and restarts
// agree: the first candidate is 1 + the assistant messages in the request, and a create-if-absent write claims
// it. A number already taken by the same request (same hash of messages and tools) is a client retry: the
// earlier turn is returned and its entry queued again (a record written just before a crash gets its entry
// this way; a turn already delivered is delivered again, which the workflow ignores); taken by another
// request, the next number is tried.

import { type OutboxWorkflow, sessionDoneEntry, turnEntry } from '../activities/outbox.js';
import type { SampleStore } from '../activities/sample-store.js';
import type { OpenClawConfig } from '../core/config.js';
import { turnSampleId } from '../core/sample-id.js';
import { type TurnRecord, turnRecordKey } from '../core/turn-record.js';
import type { TurnRef } from '../core/types.js';
import { CONTROL_TASK_QUEUE, type SessionInput } from '../workflows/session-signals.js';
import { requestHash } from './request-hash.js';
import { DEFAULT_RETRY, type RetryOptions, withRetry } from './retry.js';
import type { RecordedTurn, TurnDraft, TurnRecorder } from './turn-recorder.js';

/** What every session workflow of this gateway is started with, besides its session id. */
export type SessionSettings = Omit<SessionInput, 'sessionId' | 'carried'>;

export function sessionSettingsFromConfig(config: OpenClawConfig): SessionSettings {
  return {
    runId: config.runId,
    method: config.method,
    judgeVotes: config.judge.votes,
    idleTimeoutMs: config.session.idleTimeoutMs,
    continueAsNewAfterTurns: config.session.continueAsNewAfterTurns,
    heartbeatTimeoutMs: config.temporal.heartbeatTimeoutMs,
  };
}

export interface DurableTurnRecorderOptions {
  store: SampleStore;
  session: SessionSettings;
  /** Task queue of the control worker that runs session workflows. */
  taskQueue?: string;
  retry?: RetryOptions;
  /** Most turn numbers tried for one request before giving up (a runaway session id). */
  maxTurnProbes?: number;
  /** Called after an entry was queued (the gateway nudges its relay). */
  onQueued?: () => void;
}

export class DurableTurnRecorder implements TurnRecorder {
  private readonly taskQueue: string;
  private readonly retry: RetryOptions;
  private readonly maxTurnProbes: number;

  constructor(private readonly options: DurableTurnRecorderOptions) {
    this.taskQueue = options.taskQueue ?? CONTROL_TASK_QUEUE;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.maxTurnProbes = options.maxTurnProbes ?? 1_000;
  }

  async record(draft: TurnDraft): Promise<RecordedTurn> {
    const { store } = this.options;
    const hash = requestHash(draft.messages, draft.tools);
    const first = 1 + draft.messages.filter((message) => message.role === 'assistant').length;
    let candidate = first;
    for (let probe = 0; probe < this.maxTurnProbes; probe++) {
      const record: TurnRecord = {
        ...draft,
        turn: candidate,
        sampleId: turnSampleId(draft.sessionId, candidate),
        requestHash: hash,
        recordedAt: new Date().toISOString(),
      };
      const key = turnRecordKey(draft.sessionId, candidate);
      const entry = turnEntry(turnRefOf(record), this.workflowOf(record.sessionId));
      if (await withRetry(() => store.putIfAbsent(key, record, { outbox: entry }), this.retry)) {
        this.options.onQueued?.();
        return { turn: record.turn, sampleId: record.sampleId, duplicate: false };
      }
      const existing = await withRetry(() => store.get<TurnRecord>(key), this.retry);
      if (existing === undefined) continue; // deleted in between: claim the same number again
      if (existing.requestHash === hash) {
        const again = turnEntry(turnRefOf(existing), this.workflowOf(existing.sessionId));
        await withRetry(() => store.outbox.enqueue(again), this.retry);
        this.options.onQueued?.();
        return { turn: existing.turn, sampleId: existing.sampleId, duplicate: true };
      }
      candidate++;
    }
    throw new Error(
      `session ${draft.sessionId}: no free turn number after ${this.maxTurnProbes} tries (from turn ${first})`,
    );
  }

  /** Queued after the session's turns, so its workflow gets them first. */
  async endSession(sessionId: string): Promise<void> {
    const entry = sessionDoneEntry(sessionId, this.workflowOf(sessionId));
    await withRetry(() => this.options.store.outbox.enqueue(entry), this.retry);
    this.options.onQueued?.();
  }

  private workflowOf(sessionId: string): OutboxWorkflow {
    const input: SessionInput = { sessionId, ...this.options.session };
    return { taskQueue: this.taskQueue, input };
  }
}

function turnRefOf(record: TurnRecord): TurnRef {
  return {
    sessionId: record.sessionId,
    turn: record.turn,
    sampleId: record.sampleId,
    policyVersion: record.policyVersion,
    kind: 'main',
  };
}
