// Records main turns in the sample store and hands each to its session workflow with signal-with-start.
// Turn numbers come from the store, not from memory, so several gateways and restarts agree: the first
// candidate is 1 + the assistant messages in the request, and a create-if-absent write claims it. A number
// already taken by the same request (same hash of messages and tools) is a client retry: the earlier turn is
// returned and its signal sent again (the workflow ignores duplicates); taken by another request, the next
// number is tried.

import type { Client } from '@temporalio/client';
import type { SampleStore } from '../activities/sample-store.js';
import type { OpenClawConfig } from '../core/config.js';
import { turnSampleId } from '../core/sample-id.js';
import { type TurnRecord, turnRecordKey } from '../core/turn-record.js';
import type { TurnRef } from '../core/types.js';
import {
  CONTROL_TASK_QUEUE,
  type SessionInput,
  sessionDoneSignal,
  sessionWorkflowId,
  turnRecordedSignal,
} from '../workflows/session-signals.js';
import { requestHash } from './request-hash.js';
import { DEFAULT_RETRY, type RetryOptions, withRetry } from './retry.js';
import type { RecordedTurn, TurnDraft, TurnRecorder } from './turn-recorder.js';

/** The workflow type, started by name so the gateway never imports workflow code. */
export const SESSION_WORKFLOW_TYPE = 'sessionWorkflow';

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
  client: Client;
  session: SessionSettings;
  /** Task queue of the control worker that runs session workflows. */
  taskQueue?: string;
  retry?: RetryOptions;
  /** Most turn numbers tried for one request before giving up (a runaway session id). */
  maxTurnProbes?: number;
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
      if (await withRetry(() => store.putIfAbsent(key, record), this.retry)) {
        await this.handOff(record);
        return { turn: record.turn, sampleId: record.sampleId, duplicate: false };
      }
      const existing = await withRetry(() => store.get<TurnRecord>(key), this.retry);
      if (existing === undefined) continue; // deleted in between: claim the same number again
      if (existing.requestHash === hash) {
        await this.handOff(existing);
        return { turn: existing.turn, sampleId: existing.sampleId, duplicate: true };
      }
      candidate++;
    }
    throw new Error(
      `session ${draft.sessionId}: no free turn number after ${this.maxTurnProbes} tries (from turn ${first})`,
    );
  }

  async endSession(sessionId: string): Promise<void> {
    await withRetry(
      () =>
        this.options.client.workflow.signalWithStart(SESSION_WORKFLOW_TYPE, {
          ...this.startOptions(sessionId),
          signal: sessionDoneSignal,
          signalArgs: [],
        }),
      this.retry,
    );
  }

  /** Signal-with-start: starts the session workflow if it is not running, and delivers the turn either way. */
  private async handOff(record: TurnRecord): Promise<void> {
    const ref: TurnRef = {
      sessionId: record.sessionId,
      turn: record.turn,
      sampleId: record.sampleId,
      policyVersion: record.policyVersion,
      kind: 'main',
    };
    await withRetry(
      () =>
        this.options.client.workflow.signalWithStart(SESSION_WORKFLOW_TYPE, {
          ...this.startOptions(record.sessionId),
          signal: turnRecordedSignal,
          signalArgs: [ref],
        }),
      this.retry,
    );
  }

  private startOptions(sessionId: string) {
    const input: SessionInput = { sessionId, ...this.options.session };
    return { workflowId: sessionWorkflowId(sessionId), taskQueue: this.taskQueue, args: [input] };
  }
}
