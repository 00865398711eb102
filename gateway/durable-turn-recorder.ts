// Records main turns: each turn's record and its outbox entry are made durable in the sample store together
// (turn-persistence.ts), and recording returns as soon as they are; the relay (outbox-relay.ts) hands the turn
// to its session workflow whenever Temporal can take it, so serving never waits on Temporal.

import type { OpenClawConfig } from '../core/config.js';
import { imageStoreKey } from '../core/image-parts.js';
import { type AdapterSettings, runIdOfSession } from '../core/tenant-adapters.js';
import { type OutboxWorkflow, sessionDoneEntry, turnEntry } from '../store/outbox.js';
import type { SampleStore } from '../store/sample-store.js';
import { CONTROL_TASK_QUEUE } from '../temporal/task-queues.js';
import type { SessionInput } from '../workflows/session-signals.js';
import { DEFAULT_RETRY, type RetryOptions, withRetry } from './retry.js';
import { TurnPersistence } from './turn-persistence.js';
import type {
  PreparedTurn,
  RecordedTurn,
  RecordOptions,
  TurnDraft,
  TurnRecorder,
  TurnRequest,
} from './turn-recorder.js';

/** What every session workflow of this gateway is started with, besides its session id. */
export type SessionSettings = Omit<SessionInput, 'sessionId' | 'carried'>;

export function sessionSettingsFromConfig(config: OpenClawConfig): SessionSettings {
  return {
    runId: config.runId,
    method: config.method,
    judgeVotes: config.judge.votes,
    idleTimeoutMs: config.session.idleTimeoutMs,
    reopenHorizonMs: config.session.reopenHorizonMs,
    superseded: config.session.superseded,
    continueAsNewAfterTurns: config.session.continueAsNewAfterTurns,
    heartbeatTimeoutMs: config.temporal.heartbeatTimeoutMs,
    feedback: { rating: config.feedback.rating, correction: config.feedback.correction },
  };
}

export interface DurableTurnRecorderOptions {
  store: SampleStore;
  session: SessionSettings;
  /** Task queue of the control worker that runs session workflows. */
  taskQueue?: string;
  retry?: RetryOptions;
  /** Called after an entry was queued (the gateway nudges its relay). */
  onQueued?: () => void;
  /** Tenants with an adapter of their own: their sessions train their adapter's run (core/tenant-adapters.ts). */
  adapters?: AdapterSettings;
}

export class DurableTurnRecorder implements TurnRecorder {
  readonly persistence: TurnPersistence;
  private readonly taskQueue: string;
  private readonly retry: RetryOptions;

  constructor(private readonly options: DurableTurnRecorderOptions) {
    this.taskQueue = options.taskQueue ?? CONTROL_TASK_QUEUE;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.persistence = new TurnPersistence(options.store, {
      retry: this.retry,
      outboxEntry: (ref) => turnEntry(ref, this.workflowOf(ref.sessionId)),
    });
  }

  prepare(request: TurnRequest, options: Pick<RecordOptions, 'legacySessionId'> = {}): PreparedTurn {
    return this.persistence.prepare(request, options);
  }

  async record(draft: TurnDraft, options: RecordOptions = {}): Promise<RecordedTurn> {
    // Before the record: a record never names an image the store lacks. Create-if-absent: an image already
    // stored (sent before, by anyone) costs one existence check and is not written again.
    await Promise.all(
      [...(options.images ?? [])].map(([digest, image]) =>
        withRetry(() => this.options.store.putIfAbsent(imageStoreKey(digest), image), this.retry),
      ),
    );
    const recorded = await this.persistence.persist(draft, options);
    this.options.onQueued?.();
    return recorded;
  }

  /** Queued after the session's turns, so its workflow gets them first. */
  async endSession(sessionId: string): Promise<void> {
    const entry = sessionDoneEntry(sessionId, this.workflowOf(sessionId));
    await withRetry(() => this.options.store.outbox.enqueue(entry), this.retry);
    this.options.onQueued?.();
  }

  /** The session workflow a session's outbox entries start (turns, done, feedback). */
  workflowOf(sessionId: string): OutboxWorkflow {
    const session = this.options.session;
    const runId = runIdOfSession(this.options.adapters ?? { tenants: [] }, session.runId, sessionId);
    const input: SessionInput = { sessionId, ...session, runId };
    return { taskQueue: this.taskQueue, input };
  }
}
