// The PostgreSQL store under faults, with real processes: a PostgreSQL server (Debian's package, a temporary
// data folder), the control worker and two gateways as `openclaw-rl` commands sharing it, the reference engine,
// and the run's Temporal dev server; only the judge is a fake. Eight clients talk through both gateways while
// PostgreSQL crashes (`pg_ctl -m immediate`: no checkpoint, WAL replay on restart) and comes back: a turn is
// refused with 503 `turn_not_recorded` only while no write can be made durable, each refused turn is retried by
// its client, and the full count afterwards finds every acknowledged turn exactly once as a sample or an
// exclusion. docs/recovery.md describes it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Connection } from '@temporalio/client';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { configFromFlags } from '../../cli/cli-config.js';
import { ensureTrainingRun } from '../../cli/training-run.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { PostgresSampleStore } from '../../store/postgres-store.js';
import { type CliProcess, cliTestEnvironment, freePort, startCli } from '../support/cli-process.js';
import { engineCalls } from '../support/engine-calls.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { type PostgresServer, startPostgres } from '../support/postgres-server.js';
import { connectTestClient } from '../support/temporal.js';
import { Conversation, type ExpectedOutcome } from './conversation.js';
import { type CountContext, fullCount } from './recovery-count.js';

const BATCH_SIZE = 4;
/** How long PostgreSQL stays down while the clients talk. */
const DOWN_MS = 6_000;

describe('the PostgreSQL store: restarted under load, nothing acknowledged is lost', () => {
  let dir: string;
  let postgres: PostgresServer | undefined;
  let engine: EngineProcess | undefined;
  let judge: FakeJudge | undefined;
  let worker: CliProcess | undefined;
  const gateways: CliProcess[] = [];
  let connection: Connection | undefined;
  let store: PostgresSampleStore | undefined;
  let ctx: CountContext;
  let clients: OpenAI[] = [];
  let runId: string;
  const conversations: Conversation[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'recovery-pg-'));
    runId = `pg-${process.pid}-${Date.now().toString(36)}`;
    const [pg, model, fake] = await Promise.all([
      startPostgres(),
      makeTinyModel(join(dir, 'model')),
      startFakeJudge({ delayMs: 200 }),
    ]);
    postgres = pg;
    judge = fake;
    engine = await startReferenceEngine({ model, trainer: true });
    const env: NodeJS.ProcessEnv = {
      ...cliTestEnvironment(),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      OPENCLAW_DATA_DIR: join(dir, 'data'),
      OPENCLAW_STORE: 'postgres',
      OPENCLAW_STORE_URL: pg.url,
      OPENCLAW_ENGINE_URL: engine.url,
      OPENCLAW_TEACHER_URL: engine.url,
      OPENCLAW_JUDGE_URL: fake.url,
      OPENCLAW_JUDGE_MODEL: 'fake-judge',
      OPENCLAW_METHOD: 'rl',
      OPENCLAW_BATCH_SIZE: String(BATCH_SIZE),
      OPENCLAW_RUN_ID: runId,
      // A task queue of its own on the shared dev server.
      OPENCLAW_CONTROL_TASK_QUEUE: `control-${runId}`,
      OPENCLAW_HEARTBEAT_TIMEOUT_MS: '2000',
      OPENCLAW_SESSION_IDLE_TIMEOUT_MS: '600000',
      OPENCLAW_OUTBOX_LEASE_MS: '3000',
    };
    const config = configFromFlags({}, env);
    const connected = await connectTestClient();
    connection = connected.connection;
    const client = connected.client;
    store = new PostgresSampleStore({ url: pg.url });
    ctx = { client, store, engine: engineCalls(engine.url), runId, batchSize: BATCH_SIZE };

    worker = startCli('worker', ['worker', 'control'], env, join(dir, 'worker.log'));
    const ports = [await freePort(), await freePort()];
    for (const [index, port] of ports.entries())
      gateways.push(
        startCli(
          `gateway-${index}`,
          ['gateway', '--port', String(port)],
          env,
          join(dir, `gateway-${index}.log`),
        ),
      );
    await Promise.all([
      worker.waitForLine(/^control worker on task queue/, 120_000),
      ...gateways.map((g) => g.waitForLine(/^gateway http/, 60_000)),
    ]);
    clients = ports.map(
      (port) =>
        new OpenAI({
          baseURL: `http://127.0.0.1:${port}/v1`,
          apiKey: 'none',
          maxRetries: 0,
          timeout: 60_000,
        }),
    );
    expect(await ensureTrainingRun(client, config, 0)).toBe('started');
  }, 240_000);

  afterAll(async () => {
    for (const gateway of gateways) await gateway.kill9();
    await worker?.kill9();
    await store?.close();
    await connection?.close().catch(() => undefined);
    await engine?.stop();
    await judge?.close();
    await postgres?.destroy();
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('refuses turns with 503 only while PostgreSQL is down; every acknowledged turn counted once', async () => {
    const texts = ['Hello, a question', 'thanks, that helps', 'that is wrong', 'hmm, go on'];
    for (let i = 0; i < 8; i++)
      conversations.push(
        new Conversation(`pg-${runId}-${i}`, clients[i % 2] as OpenAI, store as PostgresSampleStore),
      );
    // One acknowledged turn each before the fault.
    await Promise.all(conversations.map((c) => c.send(texts[0] as string, { stream: false })));

    let downAt = 0;
    let upAt = Number.POSITIVE_INFINITY;
    const refused: { startedAt: number; endedAt: number; status: number | undefined; error: string }[] = [];
    let stop = false;
    const talking = Promise.all(
      conversations.map(async (c, i) => {
        for (let turn = 1; !stop; turn++) {
          const text = texts[turn % texts.length] as string;
          for (;;) {
            const startedAt = Date.now();
            const attempt = await c.attempt(text, { stream: (turn + i) % 2 === 0 });
            if (attempt.acknowledged) break;
            refused.push({ startedAt, endedAt: Date.now(), status: attempt.status, error: attempt.error });
            await new Promise((resolve) => setTimeout(resolve, 250));
          }
        }
      }),
    );
    // Let them talk, then crash PostgreSQL, keep it down, and bring it back.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    downAt = Date.now();
    await postgres?.crash();
    await new Promise((resolve) => setTimeout(resolve, DOWN_MS));
    await postgres?.start();
    upAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    stop = true;
    await talking;

    console.log(
      `[recovery-pg] PostgreSQL down ${((upAt - downAt) / 1000).toFixed(1)} s; ${refused.length} attempts refused ` +
        `(${[...new Set(refused.map((r) => r.status ?? 'stream'))].join(', ')}); ` +
        `${conversations.reduce((n, c) => n + c.acknowledgedCount, 0)} turns acknowledged`,
    );
    expect(refused.length).toBeGreaterThan(0);
    for (const attempt of refused) {
      // A plain request gets 503; a stream ends with the same error event and no [DONE].
      if (attempt.status !== undefined) expect(attempt.status).toBe(503);
      else expect(attempt.error).toContain('could not be recorded');
      // Only while no write could be made durable: every refused request was in flight while the server was
      // down (it ended after the crash and started before the server was back); none that started later was.
      expect(attempt.endedAt).toBeGreaterThanOrEqual(downAt);
      expect(attempt.startedAt).toBeLessThan(upAt);
    }

    await Promise.all(conversations.map((c, i) => c.send('ok, bye', { stream: i % 2 === 0, done: true })));
    const expected = new Map<string, ExpectedOutcome>();
    for (const c of conversations)
      for (const [id, outcome] of await c.expectations()) expected.set(id, outcome);
    await fullCount(ctx, expected, [], () =>
      [worker, ...gateways].map((p) => `${p?.name}:\n${p?.tail(20)}`).join('\n'),
    );
    // The relay deletes an entry after its delivery: the last ones (the sessions' done entries) may still be
    // on their way once every sample is counted.
    await vi.waitFor(
      async () => expect(await store?.outbox.stats()).toEqual({ depth: 0, oldestCreatedAt: null }),
      { timeout: 30_000, interval: 250 },
    );
  }, 300_000);
});
