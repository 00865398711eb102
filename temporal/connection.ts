// How every project process reaches Temporal. Connection settings come from @temporalio/envconfig: the
// standard `TEMPORAL_*` variables (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*,
// TEMPORAL_GRPC_META_*) over a `temporal.toml` profile (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE), the same
// ones the `temporal` CLI reads; the project's address and namespace (`--temporal-address`, the config) win
// over both. Every connection carries the payload encryption plugin when a key is configured, so the clients
// and workers made from it encrypt.

import { Client, Connection } from '@temporalio/client';
import { type ClientConnectConfig, loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import type { OpenClawConfig } from '../core/config.js';
import { type PayloadEncryption, payloadEncryptionFromConfig } from '../security/payload-encryption.js';
import { processTracing } from './tracing.js';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * gRPC reconnect backoff for clients that deliver: grpc-js backs off up to 120 s between reconnects by
 * default, so after a minute's outage the first delivery could wait that long for the channel; 2 s at most.
 */
export const TEMPORAL_RECONNECT_ARGS = {
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 2_000,
} as const;

/** The envconfig profile (file + `TEMPORAL_*` variables) this environment selects. */
export function temporalProfile(env: Env = process.env): ClientConnectConfig {
  try {
    return loadClientConnectConfig({ overrideEnvVars: setVariables(env) });
  } catch (error) {
    throw new Error(
      `Temporal connection profile (TEMPORAL_CONFIG_FILE / TEMPORAL_PROFILE): ${(error as Error).message}`,
    );
  }
}

export interface TemporalConnectionSettings {
  options: NativeConnectionOptions & { address: string };
  namespace: string;
  encryption: PayloadEncryption;
}

/** Where and how to connect: the profile's TLS, API key and headers, the config's address and namespace. */
export function temporalConnectionSettings(
  config: OpenClawConfig,
  env: Env = process.env,
): TemporalConnectionSettings {
  const { connectionOptions } = temporalProfile(env);
  return {
    options: { ...definedOnly(connectionOptions), address: config.temporal.address },
    namespace: config.temporal.namespace,
    encryption: payloadEncryptionFromConfig(config),
  };
}

/** One line for start-up output: the server, how the connection is secured, and payload encryption. */
export function describeTemporalConnection(settings: TemporalConnectionSettings): string {
  const { tls, apiKey } = settings.options;
  const secured = [
    !tls ? 'no TLS' : typeof tls === 'object' && tls.clientCertPair ? 'mTLS' : 'TLS',
    ...(apiKey ? ['API key'] : []),
  ].join(', ');
  return `temporal ${settings.options.address} namespace ${settings.namespace} (${secured}); ${settings.encryption.description}`;
}

export interface ConnectedClient {
  client: Client;
  connection: Connection;
  close(): Promise<void>;
}

export async function connectClient(
  config: OpenClawConfig,
  env: Env = process.env,
): Promise<ConnectedClient> {
  const settings = temporalConnectionSettings(config, env);
  return clientOf(await Connection.connect(clientConnectionOptions(settings)), settings);
}

/** A client whose connection is made on its first call, so its owner starts and serves while Temporal is down. */
export function connectClientLazily(config: OpenClawConfig, env: Env = process.env): ConnectedClient {
  const settings = temporalConnectionSettings(config, env);
  return clientOf(Connection.lazy(clientConnectionOptions(settings)), settings);
}

function clientOf(connection: Connection, settings: TemporalConnectionSettings): ConnectedClient {
  return {
    // With tracing on, starts and signals carry the caller's trace context into the workflow.
    client: new Client({ connection, namespace: settings.namespace, plugins: tracingPlugins() }),
    connection,
    close: () => connection.close(),
  };
}

/** The client connection takes the same settings (its `metadata` and `apiKey` types are wider) and reconnects quickly: outbox relays deliver through it after an outage. */
function clientConnectionOptions(settings: TemporalConnectionSettings) {
  const { tls, apiKey, metadata, address } = settings.options;
  return {
    ...definedOnly({ address, tls, apiKey, metadata }),
    channelArgs: TEMPORAL_RECONNECT_ARGS,
    plugins: plugins(settings),
  };
}

export function connectWorker(config: OpenClawConfig, env: Env = process.env): Promise<NativeConnection> {
  const settings = temporalConnectionSettings(config, env);
  return NativeConnection.connect({ ...settings.options, plugins: plugins(settings) });
}

function plugins(settings: TemporalConnectionSettings) {
  return settings.encryption.plugin ? [settings.encryption.plugin] : [];
}

function tracingPlugins() {
  const tracing = processTracing();
  return tracing ? [tracing.plugin] : [];
}

/** Empty variables count as unset, as everywhere in the project's configuration. */
function setVariables(env: Env): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined && (entry[1] !== '' || entry[0].startsWith('TEMPORAL_GRPC_META_')),
    ),
  );
}

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
