// Real parts for gateway tests: a FileSampleStore in a temp dir, the run's Temporal dev server, and a
// gateway listening on a free port in front of whatever engine URL the test gives it, with its outbox relay.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import {
  type EngineProcess,
  makeTinyModel,
  makeTinyVlm,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { DurableTurnRecorder, type SessionSettings } from '../../gateway/durable-turn-recorder.js';
import { FeedbackDesk } from '../../gateway/feedback-desk.js';
import { IdempotencyKeys } from '../../gateway/idempotency.js';
import { sessionDelivery } from '../../gateway/outbox-delivery.js';
import { OutboxRelay } from '../../gateway/outbox-relay.js';
import { ResponseStates } from '../../gateway/responses/response-state.js';
import { createGateway, type GatewayOptions } from '../../gateway/server.js';
import { FileSampleStore, type SampleStore } from '../../store/sample-store.js';
import { sessionWorkflowId } from '../../temporal/workflow-ids.js';
import { connectTestEnvironment, historyValue, uniqueTaskQueue } from '../support/temporal.js';

export { freePort } from '../support/free-port.js';

export const TEST_SESSION_SETTINGS: SessionSettings = {
  runId: 'gateway-test',
  method: 'combine',
  judgeVotes: 1,
  idleTimeoutMs: 60_000,
  reopenHorizonMs: 86_400_000,
  superseded: 'exclude',
  continueAsNewAfterTurns: 200,
};

export interface TestGateway {
  url: string;
  app: FastifyInstance;
  store: SampleStore;
  relay: OutboxRelay;
  /** Resolves once the outbox is empty: every turn answered so far reached its session workflow. */
  delivered(timeoutMs?: number): Promise<void>;
  /** A client of the gateway, retries off so each call is one request. */
  openai(apiKey?: string): OpenAI;
  close(): Promise<void>;
}

export interface TestGatewayOptions
  extends Partial<Omit<GatewayOptions, 'recorder' | 'idempotency' | 'responses'>> {
  engineUrl: string;
  client: Client;
  /** Default: a FileSampleStore in a fresh temp dir. */
  store?: SampleStore;
  /** Sessions this gateway starts (default TEST_SESSION_SETTINGS). */
  session?: SessionSettings;
  /** Task queue of the session workflows (default: one no worker polls). */
  taskQueue?: string;
  /** How long an Idempotency-Key response is kept (default one day). */
  idempotencyTtlMs?: number;
  /** The clock Idempotency-Key leases are written by (default the system's; one behind stalls its holders). */
  idempotencyClock?: () => number;
}

export async function startTestGateway(options: TestGatewayOptions): Promise<TestGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'openclaw-gateway-'));
  // Journaled, as the gateway `dev` starts records turns (store.journal).
  const store = options.store ?? new FileSampleStore(join(dir, 'store'), { journal: true });
  const retry = { attempts: 2, initialDelayMs: 10, maxDelayMs: 20 };
  const relay = new OutboxRelay({
    outbox: store.outbox,
    deliver: sessionDelivery(options.client),
    pollMs: 50,
  });
  const recorder = new DurableTurnRecorder({
    store,
    session: options.session ?? TEST_SESSION_SETTINGS,
    // Without a worker (most gateway tests), a queue of their own keeps other suites' workers away.
    taskQueue: options.taskQueue ?? uniqueTaskQueue('gateway'),
    retry,
    onQueued: () => relay.notify(),
  });
  const idempotency = new IdempotencyKeys({
    store,
    ttlMs: options.idempotencyTtlMs ?? 86_400_000,
    retry,
    ...(options.idempotencyClock && { clock: options.idempotencyClock }),
  });
  const feedback = new FeedbackDesk({
    store,
    workflowOf: (sessionId) => recorder.workflowOf(sessionId),
    retry,
    onQueued: () => relay.notify(),
  });
  const responses = new ResponseStates(store);
  const app = createGateway({ ...options, recorder, idempotency, feedback, responses });
  await app.listen({ host: '127.0.0.1', port: 0 });
  relay.start();
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('gateway did not bind a TCP port');
  const url = `http://127.0.0.1:${address.port}`;
  return {
    url,
    app,
    store,
    relay,
    delivered: (timeoutMs = 20_000) => outboxEmpty(store, timeoutMs),
    openai: (apiKey = 'none') => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 }),
    async close() {
      await app.close();
      await relay.stop();
      if (!options.store) await store.close?.();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A real reference engine on a tiny model and the run's Temporal server, for a test file's gateways. */
export interface EngineStack {
  /** A temp folder of the file's own, removed on close. */
  dir: string;
  engine: EngineProcess;
  env: TestWorkflowEnvironment;
  /** Session workflows (recorded, scoped ids) terminated on close. */
  sessions: Set<string>;
  /** A fresh session id for a client of `tenant` (default `local`) to send; its scoped id is added to `sessions`. */
  session(label: string, tenant?: string): string;
  close(): Promise<void>;
}

/**
 * `vision`: the tiny vision-language model (`make-tiny-vlm`) instead of the text one, which refuses images;
 * `trainer`: the engine trains too (`--trainer`).
 */
export async function startEngineStack(
  label: string,
  options: { vision?: boolean; trainer?: boolean } = {},
): Promise<EngineStack> {
  const dir = await mkdtemp(join(tmpdir(), `openclaw-${label}-`));
  const make = options.vision ? makeTinyVlm : makeTinyModel;
  const [model, env] = await Promise.all([make(join(dir, 'model')), connectTestEnvironment()]);
  const engine = await startReferenceEngine({ model, ...(options.trainer && { trainer: true }) });
  const sessions = new Set<string>();
  return {
    dir,
    engine,
    env,
    sessions,
    session(sessionLabel, tenant = LOCAL_TENANT) {
      const id = uniqueSessionId(sessionLabel);
      sessions.add(scopedSessionId(tenant, id));
      return id;
    },
    async close() {
      await terminateSessions(env, sessions);
      await env.teardown();
      await engine.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Waits until `store`'s outbox has no entry left (every queued turn delivered). */
export async function outboxEmpty(store: SampleStore, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { depth } = await store.outbox.stats();
    if (depth === 0) return;
    if (Date.now() > deadline) throw new Error(`outbox still holds ${depth} entries after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A session id no other test or earlier run used (the Temporal server is shared). */
export function uniqueSessionId(label: string): string {
  return `gw-${label}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
}

const GRPC_NOT_FOUND = 5;

export interface ReceivedSignal {
  name: string;
  args: unknown[];
}

/** The signals a session workflow received, in order, decoded; empty if it was never started. */
export async function sessionSignals(client: Client, sessionId: string): Promise<ReceivedSignal[]> {
  let events: Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>['events'];
  try {
    events = (await client.workflow.getHandle(sessionWorkflowId(sessionId)).fetchHistory()).events;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError || (error as { code?: unknown }).code === GRPC_NOT_FOUND)
      return [];
    throw error;
  }
  const signals: ReceivedSignal[] = [];
  for (const event of events ?? []) {
    const signaled = event.workflowExecutionSignaledEventAttributes;
    if (!signaled) continue;
    const args = await Promise.all((signaled.input?.payloads ?? []).map((p) => historyValue(client, p)));
    signals.push({ name: signaled.signalName ?? '', args });
  }
  return signals;
}

/** The input a session workflow was started with. */
export async function sessionStartInput(client: Client, sessionId: string): Promise<unknown> {
  const history = await client.workflow.getHandle(sessionWorkflowId(sessionId)).fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const payload = started?.input?.payloads?.[0];
  return payload ? historyValue(client, payload) : undefined;
}

/** Terminates the session workflows a test started (no worker ever runs them). */
export async function terminateSessions(env: TestWorkflowEnvironment, sessionIds: Iterable<string>) {
  for (const id of sessionIds) {
    try {
      await env.client.workflow.getHandle(sessionWorkflowId(id)).terminate('gateway test finished');
    } catch {
      // never started, or already closed
    }
  }
}
