// Crash recovery, with real processes: the policy engine, the control worker and the gateway run as
// `openclaw-rl` commands, the Temporal dev server keeps its database in a file, the reference engine trains
// for real, and only the judge is a fake (it votes by rule, slowly, so scoring can be caught in flight).
// Each crash is followed by a full count (recovery-count.ts): every acknowledged turn is exactly one sample
// or one exclusion, no sample is trained twice, and training goes on from its last checkpoint.
// docs/recovery.md describes the scenarios.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Connection } from '@temporalio/client';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromFlags } from '../../cli/cli-config.js';
import { type DevServer, startTemporalDevServer } from '../../cli/temporal-dev-server.js';
import { ensureTrainingRun } from '../../cli/training-run.js';
import { makeTinyModel } from '../../engines/reference-engine-process.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { scoreTurnWorkflowId, trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingStatusQuery } from '../../workflows/training-signals.js';
import {
  type CliProcess,
  cliTestEnvironment,
  freePort,
  freePortPair,
  killOnExit,
  startCli,
} from '../support/cli-process.js';
import { type DelayingProxy, startDelayingProxy } from '../support/delaying-proxy.js';
import { type EngineCalls, engineCalls } from '../support/engine-calls.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { connectTestClient } from '../support/temporal.js';
import { startTemporalCluster, type TemporalCluster } from '../support/temporal-cluster.js';
import { Conversation, type ExpectedOutcome, type SendOptions } from './conversation.js';
import {
  activityAttempts,
  type CountContext,
  type CountResult,
  fullCount,
  servedVersion,
  trainerInfo,
} from './recovery-count.js';

const RUN_ID = 'recovery';
const BATCH_SIZE = 2;
/** Long enough to kill the worker while judge calls are in flight; short enough to keep the file quick. */
const JUDGE_DELAY_MS = 1_500;
/** How long the proxy holds the engine's answer to a training call while the worker is to be killed. */
const HOLD_MS = 4_000;
const PHASE_TIMEOUT_MS = 180_000;
/** OPENCLAW_TEST_TEMPORAL=server: the whole matrix on the Temporal server with PostgreSQL. */
const ON_REAL_SERVER = process.env.OPENCLAW_TEST_TEMPORAL === 'server';
/** How long Temporal stays down while the clients talk (the 60 s variant: bench/outbox-drain.ts). */
const OUTAGE_MS = 15_000;
/** Turns each of the eight clients sends during the outage. */
const OUTAGE_TURNS = 5;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Sends a turn and returns how long the acknowledged attempt took, in ms. */
async function timedSend(c: Conversation, text: string, options: SendOptions): Promise<number> {
  const { attempts } = await c.send(text, options);
  const last = attempts.at(-1);
  return last?.acknowledged ? last.ms : Number.NaN;
}

/** Polls `probe` until it returns a value (not null/undefined/false); never a fixed sleep. */
async function waitFor<T>(
  what: string,
  probe: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs: number,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * The engine process an `openclaw-rl engine` command started: its child running `openclaw_engine` (Linux
 * /proc). That Python process holds the served weights and the trainer's state; the command only launched it.
 */
function engineChildOf(pid: number): number {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number),
  );
  const engine = children.find((child) => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('openclaw_engine');
    } catch {
      return false;
    }
  });
  if (engine === undefined) throw new Error(`no openclaw_engine child under the engine command (pid ${pid})`);
  return engine;
}

/** Engine pids still running: killed with the test process, since killing their command leaves them behind. */
const enginePids = new Set<number>();
process.once('exit', () => {
  for (const pid of enginePids) killPid(pid);
});

/** SIGKILL to `pid` if it still is an engine process (a pid freed by a dead engine may have been reused). */
function killPid(pid: number): void {
  try {
    if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('openclaw_engine'))
      process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** A forward pass's log-probs of a fixed text: two engines that give the same ones serve the same weights. */
async function servedLogProbs(engine: EngineCalls): Promise<number[]> {
  const out = await engine.generate({
    text: 'The sea was calm and the boats came home before the storm.',
    sampling_params: { temperature: 0, max_new_tokens: 1 },
    return_logprob: true,
    logprob_start_len: 0,
  });
  return (out.meta_info.input_token_logprobs ?? []).flatMap(([value]) => (value === null ? [] : [value]));
}

function maxDifference(a: number[], b: number[]): number {
  expect(a.length).toBe(b.length);
  return Math.max(...a.map((value, index) => Math.abs(value - (b[index] ?? Number.NaN))));
}

describe('crash recovery: every acknowledged turn becomes exactly one sample or one exclusion', () => {
  let dir: string;
  let dataDir: string;
  let temporalAddress: string;
  let temporal: Pick<DevServer, 'process' | 'stop'> | undefined;
  let cluster: TemporalCluster | undefined;
  /** `openclaw-rl engine`, and the Python engine process it started. */
  let engine: CliProcess | undefined;
  let enginePid: number | undefined;
  let engineEnv: NodeJS.ProcessEnv;
  /** The base model's log-probs (version 0), to tell a restart that lost the trained weights. */
  let baseLogProbs: number[] = [];
  let judge: FakeJudge | undefined;
  let proxy: DelayingProxy | undefined;
  let worker: CliProcess | undefined;
  let gateway: CliProcess | undefined;
  let connection: Connection | undefined;
  let ctx: CountContext;
  let openai: OpenAI;
  let gatewayEnv: NodeJS.ProcessEnv;
  let workerEnv: NodeJS.ProcessEnv;
  let gatewayPort: number;
  let gatewayPortB: number;
  let openaiB: OpenAI;
  const extraGateways: CliProcess[] = [];
  const conversations: Conversation[] = [];
  const counts: CountResult[] = [];
  let failed = false;

  const conversation = (name: string, via = openai): Conversation => {
    const made = new Conversation(`rec-${name}`, via, ctx.store);
    conversations.push(made);
    return made;
  };

  /**
   * The dev server on the suite's own address and database file (a restart finds its workflows there), or with
   * OPENCLAW_TEST_TEMPORAL=server the Temporal server on PostgreSQL (restarted on the same database).
   */
  const startDevServer = async (): Promise<Pick<DevServer, 'process' | 'stop'>> => {
    if (ON_REAL_SERVER) {
      if (cluster) await cluster.restart();
      else {
        cluster = await startTemporalCluster(join(dir, 'temporal-server'));
        temporalAddress = cluster.address;
      }
      temporal = cluster;
      killOnExit(cluster.process);
      return cluster;
    }
    const server = await startTemporalDevServer(temporalAddress, dataDir);
    temporal = server;
    killOnExit(server.process);
    return server;
  };

  /**
   * `openclaw-rl engine` with the suite's engine URL, data dir, run id and model, as a user starts it; resolves
   * with the policy version it reports (the run's newest published one, loaded before it says so).
   */
  const startEngine = async (): Promise<number> => {
    const started = startCli('engine', ['engine'], engineEnv, join(dir, 'engine.log'));
    engine = started;
    const line = await started.waitForLine(/^engine http\S+ model=.* policy version \d+$/, 180_000);
    const pid = started.child.pid;
    if (pid === undefined) throw new Error('engine command has no pid');
    enginePid = engineChildOf(pid);
    enginePids.add(enginePid);
    return Number(/policy version (\d+)$/.exec(line)?.[1]);
  };

  /** `kill -9` the engine process itself; its command notices and exits, which reaps it. */
  const killEngine = (): void => {
    if (enginePid !== undefined) killPid(enginePid);
  };

  const startWorker = async (): Promise<CliProcess> => {
    const started = startCli('worker', ['worker', 'control'], workerEnv, join(dir, 'worker.log'));
    worker = started;
    await started.waitForLine(/^control worker on task queue/, 120_000);
    return started;
  };

  /** `openclaw-rl gateway`; the first one (`gateway`) is the one most phases talk to. */
  const startGatewayProcess = async (name = 'gateway', port = gatewayPort): Promise<CliProcess> => {
    const started = startCli(name, ['gateway', '--port', String(port)], gatewayEnv, join(dir, `${name}.log`));
    if (name === 'gateway') gateway = started;
    else extraGateways.push(started);
    await started.waitForLine(/^gateway http/, 60_000);
    return started;
  };

  const explain = (): string =>
    [
      `worker:\n${worker?.tail(30) ?? '(none)'}`,
      `gateway:\n${gateway?.tail(15) ?? '(none)'}`,
      `engine:\n${engine?.tail(15) ?? '(none)'}`,
      `logs in ${dir}`,
    ].join('\n');

  /** The run's policy version once it reached `version`, else null (for waitFor). */
  const runVersion = async (version: number): Promise<number | null> => {
    const status = await ctx.client.workflow
      .getHandle(trainingWorkflowId(RUN_ID))
      .query(trainingStatusQuery)
      .catch(() => null);
    return status && status.policyVersion >= version ? status.policyVersion : null;
  };

  /** The full count over every conversation so far. */
  const count = async (): Promise<CountResult> => {
    const expected = new Map<string, ExpectedOutcome>();
    const open: string[] = [];
    for (const c of conversations) {
      for (const [id, outcome] of await c.expectations()) expected.set(id, outcome);
      open.push(...(await c.open()));
    }
    const result = await fullCount(ctx, expected, open, explain);
    counts.push(result);
    return result;
  };

  /** A phase runs only if the ones before it passed: each builds on the state the last one left. */
  const phase = (name: string, body: () => Promise<void>) =>
    it(
      name,
      async () => {
        // Each phase builds on the state the last one left: after a failure it cannot run meaningfully.
        if (failed) throw new Error(`not run: an earlier phase failed`);
        const started = Date.now();
        try {
          await body();
        } catch (error) {
          failed = true;
          throw error;
        } finally {
          console.log(`[recovery] ${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
        }
      },
      PHASE_TIMEOUT_MS,
    );

  beforeAll(async () => {
    const started = Date.now();
    dir = await mkdtemp(join(tmpdir(), 'recovery-'));
    dataDir = join(dir, 'data');
    await mkdir(dataDir, { recursive: true });
    temporalAddress = `127.0.0.1:${await freePortPair(1000)}`;
    gatewayPort = await freePort();
    gatewayPortB = await freePort();
    const engineUrl = `http://127.0.0.1:${await freePort()}`;

    // Each is kept as soon as it runs, so afterAll stops it even when another one failed to start.
    const [, model, fakeJudge] = await Promise.all([
      startDevServer(),
      makeTinyModel(join(dir, 'model')),
      startFakeJudge({ delayMs: JUDGE_DELAY_MS }).then((started) => {
        judge = started;
        return started;
      }),
    ]);
    engineEnv = {
      ...cliTestEnvironment(),
      OPENCLAW_ENGINE_URL: engineUrl,
      OPENCLAW_DATA_DIR: dataDir,
      OPENCLAW_RUN_ID: RUN_ID,
      OPENCLAW_MODEL: model,
    };
    expect(await startEngine()).toBe(0);
    proxy = await startDelayingProxy(engineUrl);

    gatewayEnv = {
      ...cliTestEnvironment(),
      TEMPORAL_ADDRESS: temporalAddress,
      OPENCLAW_DATA_DIR: dataDir,
      OPENCLAW_ENGINE_URL: engineUrl,
      OPENCLAW_JUDGE_URL: fakeJudge.url,
      OPENCLAW_JUDGE_MODEL: 'fake-judge',
      OPENCLAW_METHOD: 'rl',
      OPENCLAW_BATCH_SIZE: String(BATCH_SIZE),
      OPENCLAW_RUN_ID: RUN_ID,
      OPENCLAW_HEARTBEAT_TIMEOUT_MS: '2000',
      // Sessions end with X-Session-Done here; the idle timer must not close one between two turns.
      OPENCLAW_SESSION_IDLE_TIMEOUT_MS: '600000',
      // A dead gateway's undelivered entries are taken over after 3 s instead of 10.
      OPENCLAW_OUTBOX_LEASE_MS: '3000',
    };
    // The worker reaches the engine through the proxy, so a training step can be held open and killed.
    workerEnv = { ...gatewayEnv, OPENCLAW_ENGINE_URL: proxy.url };
    const config = configFromFlags({}, gatewayEnv);

    const connected = await connectTestClient(temporalAddress);
    connection = connected.connection;
    const client = connected.client;
    ctx = {
      client,
      store: new FileSampleStore(join(dataDir, 'store')),
      engine: engineCalls(engineUrl),
      runId: RUN_ID,
      batchSize: BATCH_SIZE,
    };
    openai = new OpenAI({
      baseURL: `http://127.0.0.1:${gatewayPort}/v1`,
      apiKey: 'none',
      // Retries are the test's, so it knows which attempt was acknowledged.
      maxRetries: 0,
      timeout: 120_000,
    });
    openaiB = new OpenAI({
      baseURL: `http://127.0.0.1:${gatewayPortB}/v1`,
      apiKey: 'none',
      maxRetries: 0,
      timeout: 120_000,
    });

    baseLogProbs = await servedLogProbs(ctx.engine);
    await Promise.all([startWorker(), startGatewayProcess()]);
    expect(await ensureTrainingRun(client, config, 0)).toBe('started');
    console.log(`[recovery] setup: ${((Date.now() - started) / 1000).toFixed(1)} s (${dir})`);
  }, 240_000);

  afterAll(async () => {
    await gateway?.kill9();
    for (const extra of extraGateways) await extra.kill9();
    await worker?.kill9();
    await connection?.close().catch(() => undefined);
    await temporal?.stop();
    // A clean stop of the command stops its engine; a leftover engine process is killed by its pid.
    await engine?.stop();
    for (const pid of enginePids) killPid(pid);
    enginePids.clear();
    await proxy?.close();
    await judge?.close();
    // The logs and the store stay for a look when a phase failed (or on request).
    if (failed || process.env.KEEP_RECOVERY_DIR) console.log(`[recovery] kept ${dir}`);
    else if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  phase('1. kill -9 the control worker while scoring is in flight, restart it, count', async () => {
    const a = conversation('a');
    const b = conversation('b');
    await a.send('What is the weather like?', { stream: false });
    await b.send('Tell me a joke.', { stream: true });
    // Each second turn carries the first turn's next state: both first turns go to the judge now.
    await a.send('thanks, that helps', { stream: true });
    await b.send('that is wrong, try again', { stream: false });
    await waitFor('judge calls in flight', () => (judge?.pending ?? 0) > 0, 30_000);
    await worker?.kill9();

    // No worker runs: the gateway still acknowledges turns (durable in the store; Temporal holds the signals).
    await a.send('Bye now.', { stream: false, done: true });
    await b.send('haha thanks', { stream: true });
    await b.send('ok, see you', { stream: false, done: true });

    await startWorker();
    const result = await count();
    // The kill did land during scoring: a judge call was retried after its worker died.
    const firstTurns = [(await a.sampleIds())[0], (await b.sampleIds())[0]];
    const retried: number[] = [];
    for (const id of firstTurns)
      retried.push(...(await activityAttempts(ctx.client, scoreTurnWorkflowId(id ?? ''), 'judgeVote')));
    expect(Math.max(...retried)).toBeGreaterThan(1);
    expect(result.status.policyVersion).toBe(1);
  });

  phase('2. kill -9 the control worker during trainStep, then during publishWeights; count', async () => {
    const versionBefore = counts.at(-1)?.status.policyVersion ?? 0;
    const trainKilled = `${RUN_ID}:${counts.at(-1)?.status.incarnation}:v${versionBefore + 1}`;
    const publishKilled = versionBefore + 2;
    const c = conversation('c');
    await c.send('How do I bake bread?', { stream: true });

    // c:1 becomes a sample: with the one phase 1 left pending, a batch is full and a step starts. The proxy
    // holds the trainer's answer (the engine has trained) and the worker dies waiting for it.
    proxy?.delays.set('/train_step', HOLD_MS);
    await c.send('thanks, great recipe', { stream: false });
    await waitFor('trainStep in flight', () => (proxy?.active('/train_step') ?? 0) > 0, 60_000);
    await worker?.kill9();
    proxy?.delays.delete('/train_step');
    await c.send('that is wrong', { stream: true });
    await startWorker();
    await waitFor('the retried step to finish', () => runVersion(versionBefore + 1), 90_000, 250);

    // c:2 and c:3 fill the next batch; this time the worker dies while publishing it: the engine has already
    // loaded the new weights, the run has not recorded them.
    proxy?.delays.set('/update_weights_from_disk', HOLD_MS);
    await c.send('thanks, now it works', { stream: false });
    await waitFor(
      'publishWeights in flight',
      () => (proxy?.active('/update_weights_from_disk') ?? 0) > 0,
      60_000,
    );
    await worker?.kill9();
    proxy?.delays.delete('/update_weights_from_disk');
    await c.send('bye', { stream: true, done: true });
    await startWorker();
    const result = await count();

    // Both kills landed inside the activity (it was retried), and each step was still applied once: the
    // count checked the trainer's own step ids, and that every later step resumed from the checkpoint of
    // the one before it.
    const killedStep = result.steps.find((step) => step.input.stepId === trainKilled);
    expect(killedStep?.attempts).toBeGreaterThan(1);
    const publishAttempts = await activityAttempts(ctx.client, trainingWorkflowId(RUN_ID), 'publishWeights');
    expect(publishAttempts[publishKilled - 1]).toBeGreaterThan(1);
    expect(result.status.policyVersion).toBe(publishKilled);
  });

  phase('3. kill -9 the gateway in the middle of a stream, restart it on the same port, count', async () => {
    const d = conversation('d');
    await d.send('Write me a long story.', { stream: false });
    const long = { stream: true, maxTokens: 400, ignoreEos: true } as const;
    const broken = await d.attempt('thanks, now a longer one', {
      ...long,
      onChunk: async (chunks) => {
        if (chunks === 3) await gateway?.kill9();
      },
    });
    // The client saw the start of the answer and no [DONE]: the turn was not acknowledged.
    expect(broken.acknowledged).toBe(false);
    if (!broken.acknowledged) {
      expect(broken.chunks).toBeGreaterThanOrEqual(3);
      expect(broken.sawDone).toBe(false);
    }

    await startGatewayProcess();
    // The client retries the same request, then goes on with the conversation.
    await d.send('thanks, now a longer one', long);
    await d.send('that is wrong', { stream: false });
    await d.send('fine, goodbye', { stream: true, done: true });
    await count();
  });

  phase(
    '4. Temporal killed while 8 clients keep talking, a gateway killed before delivering; count',
    async () => {
      const e = conversation('e');
      const before: number[] = [];
      before.push(await timedSend(e, 'Plan my trip to Rome.', { stream: true }));
      before.push(await timedSend(e, 'thanks, lovely plan', { stream: false }));
      await waitFor('judge calls in flight', () => (judge?.pending ?? 0) > 0, 30_000);
      const runningWorker = worker;
      // A second gateway on the same store: half the clients talk to it.
      const second = await startGatewayProcess('gateway-b', gatewayPortB);
      const first = gateway;

      const down = temporal;
      const exited = new Promise<void>((resolve) => down?.process.once('exit', () => resolve()));
      down?.process.kill('SIGKILL');
      await exited;
      const outageStarted = Date.now();

      // Eight clients keep talking, a turn every few seconds each, for OUTAGE_MS: every turn is answered at
      // once (first attempt), since it is durable in the store with its outbox entry; nothing reaches Temporal
      // meanwhile. Their texts are neutral to the judge, so these turns become exclusions and train nothing.
      const clients = Array.from({ length: 8 }, (_, i) =>
        conversation(`outage${i}`, i % 2 === 0 ? openai : openaiB),
      );
      const texts = ['Hello, a question for you', 'hmm, go on', 'ok, and then?', 'I see'];
      const during: number[] = [];
      await Promise.all(
        clients.map(async (c, i) => {
          for (let turn = 0; turn < OUTAGE_TURNS; turn++) {
            const started = Date.now();
            const text = texts[turn % texts.length] ?? 'hi';
            const attempt = await c.attempt(text, { stream: (turn + i) % 2 === 0 });
            expect(attempt.acknowledged, `${c.sessionId} turn ${turn + 1}: ${JSON.stringify(attempt)}`).toBe(
              true,
            );
            during.push(Date.now() - started);
            const next = outageStarted + ((turn + 1) * OUTAGE_MS) / OUTAGE_TURNS;
            await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
          }
        }),
      );
      // The judge calls that were in flight answer while the server is down: the worker cannot report them.
      await waitFor('the judge to answer during the outage', () => judge?.pending === 0, 30_000);
      const waiting = await ctx.store.outbox.stats();
      expect(waiting.depth).toBeGreaterThanOrEqual(clients.length);

      // The first gateway dies with its entries written and not delivered; the other gateway (or the control
      // worker, whose relay drains the outbox too) delivers them once the first one's lease has run out.
      await first?.kill9();
      const restartedAt = Date.now();
      await startDevServer();
      await waitFor(
        'the outbox delivered',
        async () => (await ctx.store.outbox.stats()).depth === 0,
        120_000,
        100,
      );
      const drainedMs = Date.now() - restartedAt;
      console.log(
        `[recovery] outage ${((restartedAt - outageStarted) / 1000).toFixed(1)} s: ${during.length} turns from ` +
          `${clients.length} clients, all answered at once: p50 ${median(during)} ms, max ${Math.max(...during)} ms ` +
          `(before the outage ${before.join(' / ')} ms); ${waiting.depth} outbox entries delivered ` +
          `${(drainedMs / 1000).toFixed(1)} s after the restart began`,
      );

      // The clients of the dead gateway go on through the other one.
      for (const c of [e, ...clients]) c.use(openaiB);
      await e.send('thanks once more', { stream: true, done: true });
      await Promise.all(clients.map((c, i) => c.send('ok, bye', { stream: i % 2 === 0, done: true })));
      await count();
      // The same worker and second gateway carried on through the outage.
      expect(worker).toBe(runningWorker);
      expect(worker?.child.exitCode).toBeNull();
      expect(second.child.exitCode).toBeNull();
      // Later phases talk to the first gateway's port again: restart it there.
      await second.stop();
      await startGatewayProcess();
    },
  );

  phase('5. kill -9 the policy engine, restart it with `openclaw-rl engine`, count', async () => {
    const before = counts.at(-1);
    const version = before?.status.policyVersion ?? 0;
    const newest = before?.snapshot.lineage.at(-1);
    expect(version).toBeGreaterThan(0);
    expect(newest?.version).toBe(version);
    const servedBefore = await servedLogProbs(ctx.engine);
    const h = conversation('h');
    const i = conversation('i');
    const j = conversation('j');
    await h.send('Tell me about the sea.', { stream: false });

    // The engine dies under a streamed answer (the Python process itself: weights and trainer state go).
    const long = { stream: true, maxTokens: 400, ignoreEos: true } as const;
    const command = engine;
    const broken = await h.attempt('thanks, tell me more', {
      ...long,
      onChunk: (chunks) => {
        if (chunks === 3) killEngine();
      },
    });
    await waitFor(
      'the engine command to exit with its engine',
      () => command?.child.exitCode !== null || command?.child.signalCode !== null,
      15_000,
    );
    if (enginePid !== undefined) enginePids.delete(enginePid);
    // A broken stream is not an acknowledgement; an answer that still ended with [DONE] counts as usual.
    if (!broken.acknowledged) expect(broken.sawDone).toBe(false);

    // While it is down, the gateway refuses turns (502/503, nothing acknowledged); any it did acknowledge
    // would be counted like every other turn.
    const down = [
      { c: i, text: 'Hello, is anyone there?', options: { stream: false } },
      { c: j, text: 'Hi, one question', options: { stream: true, done: true } },
    ] as const;
    const refusals = [];
    for (const { c, text, options } of down) {
      const attempt = await c.attempt(text, options);
      if (!attempt.acknowledged) expect([502, 503], attempt.error).toContain(attempt.status);
      refusals.push(attempt);
    }

    // Restarted the way a user restarts it, with the same settings.
    const restartStarted = Date.now();
    expect(await startEngine()).toBe(version);
    const restartSeconds = (Date.now() - restartStarted) / 1000;
    // (a) Before any new step it serves the run's newest published version, from that version's checkpoint,
    // and its trainer starts empty: whatever it knows after the next step came from the checkpoint.
    const info = await ctx.engine.modelInfo();
    expect(String(info.weight_version)).toBe(String(version));
    expect(info.model_path).toBe(newest?.checkpoint);
    const servedAfter = await servedLogProbs(ctx.engine);
    const sameWeights = maxDifference(servedAfter, servedBefore);
    const fromBase = maxDifference(servedAfter, baseLogProbs);
    expect(sameWeights).toBeLessThan(1e-5);
    // And the check can tell: the trained weights give clearly different log-probs from the base model's.
    expect(fromBase).toBeGreaterThan(1e-4);
    const emptyTrainer = await trainerInfo(ctx.engine);
    expect(emptyTrainer.step_count).toBe(0);
    expect(emptyTrainer.step_ids).toEqual([]);
    expect(await runVersion(version)).toBe(version);
    console.log(
      `[recovery] engine command exited with code ${command?.child.exitCode} after its engine was killed; ` +
        `restart: ${restartSeconds.toFixed(1)} s; stream ${broken.acknowledged ? 'completed' : `broke after ${broken.chunks} chunks`}; ` +
        `while down: ${refusals.map((a) => (a.acknowledged ? 'acknowledged' : a.status)).join(', ')}; ` +
        `log-probs vs before ${sameWeights.toExponential(1)}, vs base ${fromBase.toExponential(1)}`,
    );

    // The clients retry what was not acknowledged and go on: h:1 and i:1 become samples (+1, -1), which with
    // the one or none left pending fills exactly one batch.
    if (!broken.acknowledged) await h.send('thanks, tell me more', long);
    for (const [index, { c, text, options }] of down.entries())
      if (!refusals[index]?.acknowledged) await c.send(text, options);
    await i.send('that is wrong', { stream: true, done: true });
    await h.send('ok, bye', { stream: false, done: true });

    // (c) The next step resumed the trainer from the last checkpoint: it knows every earlier step (restored)
    // and the new one, each once, and the engine serves the new version.
    await waitFor('the next training step', () => runVersion(version + 1), 60_000, 100);
    const trainer = await trainerInfo(ctx.engine);
    const stepIds = [
      ...(before?.snapshot.lineage ?? []).map((entry) => entry.stepId),
      `${RUN_ID}:${before?.status.incarnation}:v${version + 1}`,
    ];
    expect(trainer.step_ids).toEqual(stepIds);
    expect(trainer.step_count).toBe(version + 1);
    // The restarted engine's own log: trainStep loaded the checkpoint once, before training.
    const trainerCalls = await waitFor(
      'the step in the engine log',
      () => {
        const calls = [...(engine?.tail(300) ?? '').matchAll(/"POST (\/load_checkpoint|\/train_step) HTTP/g)];
        return calls.length >= 2 && calls.map((call) => call[1]);
      },
      10_000,
    );
    expect(trainerCalls).toEqual(['/load_checkpoint', '/train_step']);
    await waitFor(
      'the new version served',
      async () => (await servedVersion(ctx.engine)) === version + 1,
      30_000,
    );

    // (d) The full count, over every phase's turns.
    const result = await count();
    expect(result.status.policyVersion).toBe(version + 1);
    expect((await ctx.engine.modelInfo()).model_path).toBe(result.snapshot.lineage.at(-1)?.checkpoint);
    const resumed = result.steps.at(-1);
    expect(resumed?.input.resume).toEqual({ lastStepId: newest?.stepId, lastCheckpoint: newest?.checkpoint });
    expect(engine?.child.exitCode).toBeNull();
  });
});
