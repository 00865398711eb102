// How the relay delivers an outbox entry: signal-with-start of the entry's session workflow, which starts the
// workflow when it is not running and is durable on the Temporal server alone. Delivering an entry twice is
// harmless (the workflow ignores a turn it already has). Each entry carries the task queue and start input
// of its workflow, so whichever process relays it (another gateway, the control worker) starts the same one.

import { context, propagation, ROOT_CONTEXT } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import type { OutboxEntry } from '../store/outbox.js';
import { signalWithStartSession } from '../temporal/workflow-starts.js';

/** Delivers entries through `client`; `deadline` (epoch ms) bounds each call, the client's own retries included. */
export function sessionDelivery(client: Client) {
  return async (entry: OutboxEntry, deadline: number): Promise<void> => {
    const { traceContext, ...workflow } = entry.workflow;
    const session = { sessionId: entry.sessionId, ...workflow };
    // In the trace of the request that wrote the entry (a no-op without tracing or a context).
    const requestContext = propagation.extract(ROOT_CONTEXT, traceContext ?? {});
    await context.with(requestContext, () =>
      client.connection.withDeadline(deadline, () => signalWithStartSession(client, session, entry.message)),
    );
  };
}
