import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { OpenClawConfig } from '../core/config.js';
import { TEMPORAL_RECONNECT_ARGS } from '../gateway/outbox-delivery.js';

export async function connectClient(
  config: OpenClawConfig,
): Promise<{ client: Client; close(): Promise<void> }> {
  // Quick reconnects: the control worker's outbox relay delivers through this client after an outage.
  const connection = await Connection.connect({
    address: config.temporal.address,
    channelArgs: TEMPORAL_RECONNECT_ARGS,
  });
  return {
    client: new Client({ connection, namespace: config.temporal.namespace }),
    close: () => connection.close(),
  };
}

export function connectWorker(config: OpenClawConfig): Promise<NativeConnection> {
  return NativeConnection.connect({ address: config.temporal.address });
}
