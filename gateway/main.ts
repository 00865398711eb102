// Starts the gateway from the project configuration: the configured sample store (the filesystem under the
// data directory, or PostgreSQL), the durable turn recorder writing turns and their outbox entries, the outbox
// relay delivering them through a Temporal client, and the HTTP server on gateway.host:gateway.port. The
// Temporal connection is lazy: the gateway starts and serves while Temporal is down, and the relay delivers
// once it is up. It refuses to listen beyond loopback without an API key unless `gateway.allowNoKeys` says so.

import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { LoggerOptions } from 'pino';
import type { OpenClawConfig } from '../core/config.js';
import { LOCAL_TENANT } from '../core/tenant.js';
import { type ConfiguredApiKeys, configuredApiKeys } from '../security/api-keys.js';
import { engineAuthHeaders } from '../security/engine-token.js';
import { isLoopbackHost } from '../security/loopback-host.js';
import type { SampleStore } from '../store/sample-store.js';
import { fileStoreRoot, storeFromConfig } from '../store/store-from-config.js';
import { connectClientLazily } from '../temporal/connection.js';
import { DurableTurnRecorder, sessionSettingsFromConfig } from './durable-turn-recorder.js';
import { FeedbackDesk } from './feedback-desk.js';
import { IdempotencyKeys } from './idempotency.js';
import { GatewayMetrics, type TurnTiming } from './metrics.js';
import { sessionDelivery } from './outbox-delivery.js';
import { OutboxRelay } from './outbox-relay.js';
import { ResponseStates } from './responses/response-state.js';
import { checkTeacherTemperature, loadSamplingDefaults } from './sampling.js';
import { createGateway } from './server.js';
import type { TurnRecorder } from './turn-recorder.js';

/** How often the gateway deletes stored responses past `gateway.responsesRetentionDays`. */
const RESPONSE_SWEEP_EVERY_MS = 3_600_000;

export interface GatewayDeps {
  /** Default: the store the config names (`store.backend`), closed with the gateway. */
  store?: SampleStore;
  /**
   * Default: a lazy client connected as the config and the `TEMPORAL_*` environment say (temporal/connection.ts),
   * closed with the gateway.
   */
  temporal?: Client;
  /** Default: the config's `temporal.address`. */
  temporalAddress?: string;
  /** Default: the config's `temporal.namespace`. */
  temporalNamespace?: string;
  /** Environment for the Temporal connection settings (default: this process's). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Task queue session workflows are started on (default: the config's `temporal.taskQueue`). */
  taskQueue?: string;
  /** Replaces the durable recorder altogether (no relay runs then; the store still keeps Idempotency-Key
   *  responses). */
  recorder?: TurnRecorder;
  /** Relay settings (tests shorten the lease and the poll; benchmarks time deliveries). */
  relay?: { leaseMs?: number; pollMs?: number; yieldMs?: number; onDelivered?: (lagMs: number) => void };
  /** Each answered turn's time after the engine (benchmarks; the same figures are on /metrics). */
  onTurnTiming?: (timing: TurnTiming) => void;
  bodyLimitBytes?: number;
  upstreamTimeoutMs?: number;
  /** Default: info-level JSON logs. */
  logger?: boolean | LoggerOptions;
}

export interface RunningGateway {
  /** Base URL clients use (`<url>/v1` for OpenAI SDKs). */
  url: string;
  app: FastifyInstance;
  /** The relay delivering this gateway's outbox (null with a replaced recorder). */
  relay: OutboxRelay | null;
  close(): Promise<void>;
}

/** Where the gateway's filesystem sample store lives under the data directory. */
export const sampleStoreRoot = fileStoreRoot;

/** How often expired `Idempotency-Key` entries are removed from the store. */
const IDEMPOTENCY_SWEEP_MS = 60 * 60 * 1000;

export async function startGateway(config: OpenClawConfig, deps: GatewayDeps = {}): Promise<RunningGateway> {
  const apiKeys = gatewayApiKeys(config);
  const cleanups: (() => Promise<void>)[] = [];
  const cleanUp = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  const sampling = await loadSamplingDefaults(config);
  checkTeacherTemperature(config, sampling);
  let store = deps.store;
  if (!store) {
    const owned = storeFromConfig(config);
    cleanups.push(async () => owned.close?.());
    store = owned;
  }
  const idempotency = new IdempotencyKeys({ store, ttlMs: config.gateway.idempotencyTtlMs });
  let recorder = deps.recorder;
  let relay: OutboxRelay | null = null;
  let feedback: FeedbackDesk | undefined;
  let metrics: GatewayMetrics;
  let temporalClient = deps.temporal;
  const onTurnTiming = deps.onTurnTiming;
  if (recorder) metrics = new GatewayMetrics({ processMetrics: true, ...(onTurnTiming && { onTurnTiming }) });
  else {
    let temporal = deps.temporal;
    if (!temporal) {
      // Lazy: connects on the first delivery, so neither starting nor serving needs Temporal up.
      const connected = connectClientLazily(
        {
          ...config,
          temporal: {
            ...config.temporal,
            address: deps.temporalAddress ?? config.temporal.address,
            namespace: deps.temporalNamespace ?? config.temporal.namespace,
          },
        },
        deps.env,
      );
      cleanups.push(() => connected.close());
      temporal = connected.client;
    }
    temporalClient = temporal;
    metrics = new GatewayMetrics({
      processMetrics: true,
      outbox: store.outbox,
      ...(onTurnTiming && { onTurnTiming }),
    });
    const counted = metrics.relayEvents();
    const onDelivered = deps.relay?.onDelivered;
    const started = new OutboxRelay({
      outbox: store.outbox,
      deliver: sessionDelivery(temporal),
      leaseMs: deps.relay?.leaseMs ?? config.store.outboxLeaseMs,
      // Deliveries wait while this gateway answers requests (outbox-relay.ts).
      servingIdleMs: () => metrics.chatIdleMs(),
      yieldMs: deps.relay?.yieldMs ?? config.store.outboxYieldMs,
      ...(deps.relay?.pollMs !== undefined && { pollMs: deps.relay.pollMs }),
      events: onDelivered
        ? {
            ...counted,
            delivered: (entry, lagMs) => {
              counted.delivered?.(entry, lagMs);
              onDelivered(lagMs);
            },
          }
        : counted,
    });
    relay = started;
    cleanups.push(() => started.stop());
    const durable = new DurableTurnRecorder({
      store,
      session: sessionSettingsFromConfig(config),
      adapters: config.adapters,
      taskQueue: deps.taskQueue ?? config.temporal.taskQueue,
      onQueued: () => started.notify(),
    });
    recorder = durable;
    feedback = new FeedbackDesk({
      store,
      workflowOf: (sessionId) => durable.workflowOf(sessionId),
      onQueued: () => started.notify(),
    });
  }

  const responses = new ResponseStates(store, { retentionDays: config.gateway.responsesRetentionDays });
  const app = createGateway({
    engineUrl: config.engine.url,
    engineKind: config.engine.kind,
    engineHeaders: engineAuthHeaders(config),
    recorder,
    ...(feedback && { feedback }),
    idempotency,
    responses,
    sampling: sampling.defaults,
    apiKeys: apiKeys.keys,
    bodyLimitBytes: deps.bodyLimitBytes ?? config.gateway.bodyLimitBytes,
    rateLimitPerMinute: config.gateway.rateLimitPerMinute,
    images: config.gateway.images,
    metricsNeedKey: apiKeys.keys.length > 0 && !isLoopbackHost(config.gateway.host),
    adapters: config.adapters,
    dashboard: {
      store,
      ...(temporalClient && { temporal: temporalClient }),
      runId: config.runId,
      adapters: config.adapters,
    },
    ...(deps.upstreamTimeoutMs !== undefined ? { upstreamTimeoutMs: deps.upstreamTimeoutMs } : {}),
    logger: deps.logger ?? { level: 'info' },
    metrics,
  });
  try {
    await app.listen({ host: config.gateway.host, port: config.gateway.port });
  } catch (error) {
    await cleanUp();
    throw error;
  }
  relay?.start();
  // Stored responses past their retention are deleted at start and every hour (a read also refuses them).
  const sweepResponses = () =>
    responses
      .sweep()
      .then((deleted) => {
        if (deleted > 0) app.log.info({ deleted }, 'deleted stored responses past their retention');
      })
      .catch((error: unknown) => app.log.warn({ err: error }, 'sweeping stored responses failed'));
  void sweepResponses();
  const sweeper = setInterval(sweepResponses, RESPONSE_SWEEP_EVERY_MS);
  sweeper.unref();
  cleanups.push(async () => clearInterval(sweeper));
  const address = app.server.address() as AddressInfo;
  const url = `http://${clientHost(address)}:${address.port}`;
  app.log.info(
    {
      url,
      engine: config.engine.url,
      store: config.store.backend,
      apiKeys: apiKeys.sources.length > 0 ? apiKeys.sources : 'none',
      // Names only: a key without a tenant counts as its own.
      tenants:
        apiKeys.keys.length > 0 ? new Set(apiKeys.keys.map((k) => k.tenant ?? k.key)).size : LOCAL_TENANT,
      rateLimitPerMinute: config.gateway.rateLimitPerMinute || 'off',
    },
    'gateway listening',
  );
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
    relay,
    async close() {
      clearInterval(sweep);
      await app.close();
      await cleanUp();
    },
  };
}

/**
 * The keys the gateway will accept. An open gateway on an address others can reach lets anyone write
 * training data, so that is refused unless `gateway.allowNoKeys` asks for it.
 */
export function gatewayApiKeys(config: OpenClawConfig): ConfiguredApiKeys {
  const apiKeys = configuredApiKeys(config);
  if (apiKeys.keys.length > 0 || config.gateway.allowNoKeys || isLoopbackHost(config.gateway.host))
    return apiKeys;
  throw new Error(
    `the gateway would listen on ${config.gateway.host} without an API key, so anyone who reaches it could ` +
      'write training data. Create a key with `openclaw-rl keys init` (it goes to the keys file, ' +
      'gateway.apiKeysFile), or set OPENCLAW_API_KEYS; to run it open on purpose pass --allow-no-keys ' +
      '(OPENCLAW_GATEWAY_ALLOW_NO_KEYS=true).',
  );
}

/** The address a client on this machine dials: wildcard binds become loopback. */
export function clientHost(address: AddressInfo): string {
  if (address.address === '0.0.0.0') return '127.0.0.1';
  if (address.address === '::') return '[::1]';
  return address.family === 'IPv6' ? `[${address.address}]` : address.address;
}
