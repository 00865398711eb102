// Step two of recording a main turn: deliver its reference to the session workflow with signal-with-start,
// which starts the workflow when it is not running and is durable on the Temporal server alone. Kept apart from
// the store step so that delivery can become an asynchronous relay without touching how turns are stored.

import type { Client } from '@temporalio/client';
import type { OpenClawConfig } from '../core/config.js';
import type { TurnRef } from '../core/types.js';
import {
  CONTROL_TASK_QUEUE,
  type SessionInput,
  sessionDoneSignal,
  sessionWorkflowId,
  turnRecordedSignal,
} from '../workflows/session-signals.js';
import { DEFAULT_RETRY, type RetryOptions, withRetry } from './retry.js';

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
    reopenHorizonMs: config.session.reopenHorizonMs,
    superseded: config.session.superseded,
    continueAsNewAfterTurns: config.session.continueAsNewAfterTurns,
    heartbeatTimeoutMs: config.temporal.heartbeatTimeoutMs,
  };
}

export interface SessionDeliveryOptions {
  client: Client;
  session: SessionSettings;
  /** Task queue of the control worker that runs session workflows. */
  taskQueue?: string;
  retry?: RetryOptions;
}

export class SessionDelivery {
  private readonly taskQueue: string;
  private readonly retry: RetryOptions;

  constructor(private readonly options: SessionDeliveryOptions) {
    this.taskQueue = options.taskQueue ?? CONTROL_TASK_QUEUE;
    this.retry = options.retry ?? DEFAULT_RETRY;
  }

  /** Delivers a turn; delivering one twice is harmless (the workflow ignores turns it already has). */
  async deliver(ref: TurnRef): Promise<void> {
    await withRetry(
      () =>
        this.options.client.workflow.signalWithStart(SESSION_WORKFLOW_TYPE, {
          ...this.startOptions(ref.sessionId),
          signal: turnRecordedSignal,
          signalArgs: [ref],
        }),
      this.retry,
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

  private startOptions(sessionId: string) {
    const input: SessionInput = { sessionId, ...this.options.session };
    return { workflowId: sessionWorkflowId(sessionId), taskQueue: this.taskQueue, args: [input] };
  }
}
