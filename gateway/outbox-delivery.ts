// How the relay delivers an outbox entry: signal-with-start of the entry's session workflow, which starts the
// workflow when it is not running and is durable on the Temporal server alone. Delivering an entry twice is
// harmless (the workflow ignores a turn it already has). Each entry carries the task queue and start input
// of its workflow, so whichever process relays it (another gateway, the control worker) starts the same one.

import type { Client } from '@temporalio/client';
import type { OutboxEntry } from '../activities/outbox.js';
import { sessionDoneSignal, sessionWorkflowId, turnRecordedSignal } from '../workflows/session-signals.js';

/**
 * gRPC reconnect backoff for clients that deliver: grpc-js backs off up to 120 s between reconnects by
 * default, so after a minute's outage the first delivery could wait that long for the channel; 2 s at most.
 */
export const TEMPORAL_RECONNECT_ARGS = {
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 2_000,
} as const;

/** The workflow type, started by name so the gateway never imports workflow code. */
export const SESSION_WORKFLOW_TYPE = 'sessionWorkflow';

/** Delivers entries through `client`; `deadline` (epoch ms) bounds each call, the client's own retries included. */
export function sessionDelivery(client: Client) {
  return async (entry: OutboxEntry, deadline: number): Promise<void> => {
    const start = {
      workflowId: sessionWorkflowId(entry.sessionId),
      taskQueue: entry.workflow.taskQueue,
      args: [entry.workflow.input],
    };
    const { message } = entry;
    await client.connection.withDeadline(deadline, () =>
      message.kind === 'turn'
        ? client.workflow.signalWithStart(SESSION_WORKFLOW_TYPE, {
            ...start,
            signal: turnRecordedSignal,
            signalArgs: [message.ref],
          })
        : client.workflow.signalWithStart(SESSION_WORKFLOW_TYPE, {
            ...start,
            signal: sessionDoneSignal,
            signalArgs: [],
          }),
    );
  };
}
