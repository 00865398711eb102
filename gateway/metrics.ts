// Prometheus metrics of one gateway instance, in a registry of its own (no global state: two gateways in
// one process, as in tests, keep separate counts).

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Outbox } from '../store/outbox.js';
import type { UpstreamErrorKind } from './engine-upstream.js';
import type { RelayEvents } from './outbox-relay.js';
import type { Pairing } from './turn-recorder.js';

export type RecordOutcome = 'recorded' | 'duplicate';

/** Seconds: from half a millisecond (a side turn) to seconds (a durable write on a busy disk). */
const AFTER_ENGINE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** What the gateway did after the engine's last byte for one answered turn (benchmarks listen to these). */
export interface TurnTiming {
  turnType: 'main' | 'side';
  /** From the engine's last byte (the full JSON, or `[DONE]` of a stream) to the answer's last byte written. */
  afterEngineMs: number;
  /** A main turn's durable write (record, outbox entry, reply index), inside `afterEngineMs`. */
  recordMs: number | null;
}

export interface GatewayMetricsOptions {
  processMetrics?: boolean;
  outbox?: Outbox;
  /** Called with each answered turn's timing, after it was observed. */
  onTurnTiming?: (timing: TurnTiming) => void;
}

export class GatewayMetrics {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: 'openclaw_gateway_requests_total',
    help: 'HTTP requests answered, by route and status code.',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });

  readonly requestDuration = new Histogram({
    name: 'openclaw_gateway_request_duration_seconds',
    help: 'Time from request to the end of the response (the whole stream for streaming requests).',
    labelNames: ['route'] as const,
    buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });

  readonly timeToFirstToken = new Histogram({
    name: 'openclaw_gateway_time_to_first_token_seconds',
    help: 'Streaming requests: time from request to the first generated token relayed from the engine.',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly turns = new Counter({
    name: 'openclaw_gateway_turns_total',
    help: 'Chat turns served, by turn type (main turns are recorded; side turns are not).',
    labelNames: ['turn_type'] as const,
    registers: [this.registry],
  });

  readonly turnsRecorded = new Counter({
    name: 'openclaw_gateway_turns_recorded_total',
    help: 'Main turns made durable in the sample store with their outbox entry, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly turnPairings = new Counter({
    name: 'openclaw_gateway_turn_pairings_total',
    help: 'New main turns by how the turn they continue was found: continuation (reply and exact prefix), reply (reply only: a compacted conversation), unmatched (a kept reply the gateway never recorded), none (nothing to continue).',
    labelNames: ['pairing'] as const,
    registers: [this.registry],
  });

  readonly idempotentReplays = new Counter({
    name: 'openclaw_gateway_idempotent_replays_total',
    help: 'Requests answered with the stored response of their Idempotency-Key, without asking the engine.',
    registers: [this.registry],
  });

  readonly recordFailures = new Counter({
    name: 'openclaw_gateway_record_failures_total',
    help: 'Main turns that could not be recorded (the client got an error instead of a complete response).',
    registers: [this.registry],
  });

  readonly sessionEndFailures = new Counter({
    name: 'openclaw_gateway_session_end_failures_total',
    help: 'X-Session-Done that could not be queued for delivery (the idle timer closes those sessions).',
    registers: [this.registry],
  });

  readonly inFlight = new Gauge({
    name: 'openclaw_gateway_in_flight_requests',
    help: 'Requests being served now.',
    registers: [this.registry],
  });

  readonly upstreamErrors = new Counter({
    name: 'openclaw_gateway_upstream_errors_total',
    help: 'Failures talking to the policy engine, by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly clientDisconnects = new Counter({
    name: 'openclaw_gateway_client_disconnects_total',
    help: 'Requests whose client went away before the response completed (nothing recorded).',
    registers: [this.registry],
  });

  readonly outboxDelivered = new Counter({
    name: 'openclaw_outbox_delivered_total',
    help: 'Outbox entries this process delivered to their session workflow.',
    registers: [this.registry],
  });

  readonly outboxDeliveryFailures = new Counter({
    name: 'openclaw_outbox_delivery_failures_total',
    help: 'Delivery attempts that failed (Temporal unreachable or refusing); each entry is retried until delivered.',
    registers: [this.registry],
  });

  readonly outboxClaimFailures = new Counter({
    name: 'openclaw_outbox_claim_failures_total',
    help: "The relay's reads of the outbox that failed (the store unreachable).",
    registers: [this.registry],
  });

  readonly outboxDeliveryLag = new Histogram({
    name: 'openclaw_outbox_delivery_lag_seconds',
    help: 'From an entry being durable to its session workflow accepting it.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });

  readonly afterEngine = new Histogram({
    name: 'openclaw_gateway_after_engine_seconds',
    help: "From the engine's last byte to the answer's last byte, by turn type: what the gateway adds after generation (for a main turn, capture and the durable write).",
    labelNames: ['turn_type'] as const,
    buckets: AFTER_ENGINE_BUCKETS,
    registers: [this.registry],
  });

  readonly recordDuration = new Histogram({
    name: 'openclaw_gateway_record_seconds',
    help: "A main turn's durable write: its record, its outbox entry and its reply index.",
    buckets: AFTER_ENGINE_BUCKETS,
    registers: [this.registry],
  });

  private readonly onTurnTiming: ((timing: TurnTiming) => void) | undefined;

  /** Chat completions being answered now (the outbox relay may yield to them). */
  private chatInFlight = 0;
  /** performance.now() when the last chat completion ended. */
  private chatIdleSince = performance.now();

  chatStarted(): void {
    this.chatInFlight++;
  }

  chatEnded(): void {
    if (--this.chatInFlight === 0) this.chatIdleSince = performance.now();
  }

  /** How long no chat completion has been in flight, ms; 0 while one is. */
  chatIdleMs(): number {
    return this.chatInFlight > 0 ? 0 : performance.now() - this.chatIdleSince;
  }

  constructor(options: GatewayMetricsOptions = {}) {
    this.onTurnTiming = options.onTurnTiming;
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
    const outbox = options.outbox;
    if (outbox) {
      // Read from the store at each scrape: the outbox is shared, so this is every gateway's backlog.
      let stats: Promise<{ depth: number; oldestCreatedAt: number | null } | null> | null = null;
      const read = () => {
        stats ??= outbox
          .stats()
          .catch(() => null)
          .finally(() => setImmediate(() => (stats = null)));
        return stats;
      };
      new Gauge({
        name: 'openclaw_outbox_depth',
        help: 'Outbox entries not yet delivered to their session workflow (all gateways sharing the store).',
        registers: [this.registry],
        async collect() {
          const now = await read();
          if (now) this.set(now.depth);
        },
      });
      new Gauge({
        name: 'openclaw_outbox_oldest_age_seconds',
        help: 'Age of the oldest undelivered outbox entry (0 when the outbox is empty).',
        registers: [this.registry],
        async collect() {
          const now = await read();
          if (now) this.set(now.oldestCreatedAt === null ? 0 : (Date.now() - now.oldestCreatedAt) / 1000);
        },
      });
    }
    for (const kind of [
      'unreachable',
      'timeout',
      'unavailable',
      'client_error',
      'server_error',
      'stream',
    ] as const)
      this.upstreamErrors.inc({ kind }, 0);
    for (const outcome of ['recorded', 'duplicate'] as const) this.turnsRecorded.inc({ outcome }, 0);
    for (const pairing of ['continuation', 'reply', 'unmatched', 'none'] as const)
      this.turnPairings.inc({ pairing }, 0);
  }

  upstreamError(kind: UpstreamErrorKind | 'stream'): void {
    this.upstreamErrors.inc({ kind });
  }

  /** What the relay reports, counted here. */
  relayEvents(): RelayEvents {
    return {
      delivered: (_entry, lagMs) => {
        this.outboxDelivered.inc();
        this.outboxDeliveryLag.observe(lagMs / 1000);
      },
      deliveryFailed: () => this.outboxDeliveryFailures.inc(),
      claimFailed: () => this.outboxClaimFailures.inc(),
    };
  }

  /** One answered turn's time after the engine (see `TurnTiming`). */
  turnAnswered(timing: TurnTiming): void {
    this.afterEngine.observe({ turn_type: timing.turnType }, timing.afterEngineMs / 1000);
    if (timing.recordMs !== null) this.recordDuration.observe(timing.recordMs / 1000);
    this.onTurnTiming?.(timing);
  }

  turnRecorded(outcome: RecordOutcome, pairing: Pairing): void {
    this.turnsRecorded.inc({ outcome });
    if (outcome === 'recorded') this.turnPairings.inc({ pairing });
  }
}
