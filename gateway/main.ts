// Starts the gateway from the project configuration: a filesystem sample store under the data directory, a
// Temporal client, the durable turn recorder, and the HTTP server listening on gateway.host:gateway.port.

import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { LoggerOptions } from 'pino';
import { FileSampleStore, type SampleStore } from '../activities/sample-store.js';
import type { OpenClawConfig } from '../core/config.js';
import { DurableTurnRecorder } from './durable-turn-recorder.js';
import { IdempotencyKeys } from './idempotency.js';
import { loadSamplingDefaults } from './sampling.js';
import { createGateway } from './server.js';
import { sessionSettingsFromConfig } from './session-delivery.js';
import type { TurnRecorder } from './turn-recorder.js';

export interface GatewayDeps {
  /** Default: a FileSampleStore at `<dataDir>/store`. */
  store?: SampleStore;
  /** Default: a client connected to `temporalAddress`, closed with the gateway. */
  temporal?: Client;
  /** Default: the config's `temporal.address`. */
  temporalAddress?: string;
  /** Default: the config's `temporal.namespace`. */
  temporalNamespace?: string;
  /** Task queue session workflows are started on (default: the config's `temporal.taskQueue`). */
  taskQueue?: string;
  /** Replaces the durable recorder altogether (the Temporal options are then unused; the store still keeps
   *  Idempotency-Key responses). */
  recorder?: TurnRecorder;
  bodyLimitBytes?: number;
  upstreamTimeoutMs?: number;
  /** Default: info-level JSON logs. */
  logger?: boolean | LoggerOptions;
}

export interface RunningGateway {
  /** Base URL clients use (`<url>/v1` for OpenAI SDKs). */
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

/** Where the gateway's filesystem sample store lives under the data directory. */
export function sampleStoreRoot(config: OpenClawConfig): string {
  return join(config.dataDir, 'store');
}

/** How often expired `Idempotency-Key` entries are removed from the store. */
const IDEMPOTENCY_SWEEP_MS = 60 * 60 * 1000;

export async function startGateway(config: OpenClawConfig, deps: GatewayDeps = {}): Promise<RunningGateway> {
  let connection: Connection | null = null;
  const store = deps.store ?? new FileSampleStore(sampleStoreRoot(config));
  const sampling = await loadSamplingDefaults(config);
  const idempotency = new IdempotencyKeys({ store, ttlMs: config.gateway.idempotencyTtlMs });
  let recorder = deps.recorder;
  if (!recorder) {
    let temporal = deps.temporal;
    if (!temporal) {
      connection = await Connection.connect({
        address: deps.temporalAddress ?? config.temporal.address,
      });
      temporal = new Client({
        connection,
        namespace: deps.temporalNamespace ?? config.temporal.namespace,
      });
    }
    recorder = new DurableTurnRecorder({
      store,
      client: temporal,
      session: sessionSettingsFromConfig(config),
      taskQueue: deps.taskQueue ?? config.temporal.taskQueue,
    });
  }

  const app = createGateway({
    engineUrl: config.engine.url,
    engineKind: config.engine.kind,
    recorder,
    idempotency,
    sampling: sampling.defaults,
    apiKeys: config.gateway.apiKeys,
    ...(deps.bodyLimitBytes !== undefined ? { bodyLimitBytes: deps.bodyLimitBytes } : {}),
    ...(deps.upstreamTimeoutMs !== undefined ? { upstreamTimeoutMs: deps.upstreamTimeoutMs } : {}),
    logger: deps.logger ?? { level: 'info' },
    processMetrics: true,
  });
  try {
    await app.listen({ host: config.gateway.host, port: config.gateway.port });
  } catch (error) {
    await connection?.close();
    throw error;
  }
  const address = app.server.address() as AddressInfo;
  const url = `http://${clientHost(address)}:${address.port}`;
  app.log.info({ url, engine: config.engine.url }, 'gateway listening');
  app.log.info(
    { sampling: sampling.defaults, from: sampling.source },
    'sampling defaults for requests without them',
  );
  const sweep = setInterval(() => {
    idempotency
      .sweepExpired()
      .catch((error: unknown) => app.log.warn({ err: error }, 'expired Idempotency-Key entries not removed'));
  }, IDEMPOTENCY_SWEEP_MS);
  sweep.unref();
  return {
    url,
    app,
    async close() {
      clearInterval(sweep);
      await app.close();
      await connection?.close();
    },
  };
}

/** The address a client on this machine dials: wildcard binds become loopback. */
function clientHost(address: AddressInfo): string {
  if (address.address === '0.0.0.0') return '127.0.0.1';
  if (address.address === '::') return '[::1]';
  return address.family === 'IPv6' ? `[${address.address}]` : address.address;
}
