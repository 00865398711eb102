import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { OpenClawConfig } from '../core/config.js';

export async function connectClient(
  config: OpenClawConfig,
): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect({ address: config.temporal.address });
  return {
    client: new Client({ connection, namespace: config.temporal.namespace }),
    close: () => connection.close(),
  };
}

export function connectWorker(config: OpenClawConfig): Promise<NativeConnection> {
  return NativeConnection.connect({ address: config.temporal.address });
}
