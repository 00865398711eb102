import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decode } from '@temporalio/common/lib/internal-non-workflow/codec-helpers.js';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection } from '@temporalio/worker';
import { inject } from 'vitest';
import { PayloadEncryptionPlugin } from '../../security/payload-encryption.js';
import { keyRingFromEntries } from '../../security/payload-keys.js';

/** The run's payload encryption (global-setup.ts), as the project's own connections carry it; null when off. */
export function testEncryptionPlugin(): PayloadEncryptionPlugin | null {
  const keys = inject('payloadKeys');
  return keys
    ? new PayloadEncryptionPlugin(keyRingFromEntries(keys.split(','), inject('payloadKeyId')))
    : null;
}

/**
 * The run's key ring as the variables a command reads: spread it into an environment a test hands to CLI code
 * that connects by itself (`runEval(flags, env)`, `configFromFlags(flags, env)`), so it reads what the tests'
 * workers wrote. Empty when the run has no key ring (RECORD_HISTORIES).
 */
export function testPayloadKeysEnv(): Record<string, string> {
  const keys = inject('payloadKeys');
  return keys ? { OPENCLAW_PAYLOAD_KEYS: keys, OPENCLAW_PAYLOAD_KEY_ID: inject('payloadKeyId') } : {};
}

/**
 * Connects a test file to the run's shared Temporal dev server (started in global-setup.ts). Its client and
 * native connection encrypt payloads with the run's key ring, so workers made from them do too.
 */
export async function connectTestEnvironment(): Promise<TestWorkflowEnvironment> {
  const plugin = testEncryptionPlugin();
  return TestWorkflowEnvironment.createFromExistingServer({
    address: inject('temporalAddress'),
    namespace: inject('temporalNamespace'),
    ...(plugin && { plugins: [plugin] }),
  });
}

/** A client of `address` (default: the run's server) that encrypts like the test environment. */
export async function connectTestClient(
  address = inject('temporalAddress'),
): Promise<{ client: Client; connection: Connection }> {
  const plugin = testEncryptionPlugin();
  const connection = await Connection.connect({ address, ...(plugin && { plugins: [plugin] }) });
  return { client: new Client({ connection, namespace: inject('temporalNamespace') }), connection };
}

/** A worker connection to `address` (default: the run's server) whose workers encrypt like the test environment's. */
export async function connectTestWorkerConnection(
  address = inject('temporalAddress'),
): Promise<NativeConnection> {
  const plugin = testEncryptionPlugin();
  return NativeConnection.connect({ address, ...(plugin && { plugins: [plugin] }) });
}

/** The value of a payload read from a fetched history (histories hold payloads as the codec left them). */
export async function historyValue<T = unknown>(client: Client, payload: Payload): Promise<T> {
  const { payloadCodecs, payloadConverter } = client.options.loadedDataConverter;
  const [decoded] = await decode(payloadCodecs, [payload]);
  if (!decoded) throw new Error('the codec gave back no payload');
  return payloadConverter.fromPayload<T>(decoded);
}

/** A task queue name no other test uses, so workers of parallel files never steal each other's tasks. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
