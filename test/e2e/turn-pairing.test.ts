// Which reply is trained against which next state, as a user's agent produces them: a regenerate (or a retry
// without Idempotency-Key) followed by a continuation of the second answer, the same with the rejected answer
// trained as negative, a retry with Idempotency-Key, a branch (an edited message), and a reply after the session
// went idle, within and past the reopen horizon. The real gateway, reference engine, Temporal server and control
// worker; the judge is the LLM-judge stand-in, which records the whole next state it was shown for each reply.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type OpenClawConfig, type OpenClawConfigInput } from '../../core/config.js';
import { deriveSessionId } from '../../core/session-id.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import { exclusionKey, sampleKey } from '../../core/turn-record.js';
import type { SampleExclusion, TrainingSample } from '../../core/types.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { type RunningGateway, startGateway } from '../../gateway/main.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { scoreTurnWorkflowId, sessionWorkflowId } from '../../temporal/workflow-ids.js';
import { createControlWorker } from '../../workers/control-worker.js';
import {
  type SessionResult,
  type SessionStatus,
  sessionStatusQuery,
} from '../../workflows/session-signals.js';
import { saveHistory } from '../support/histories.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { startTranscriptJudge, type TranscriptJudge } from '../support/transcript-judge-server.js';
import { findRecordedTurn } from '../support/turn-lookup.js';
import { testWorkflowBundle } from '../support/workflow-bundle.js';

type Message = ChatCompletionMessageParam;
const user = (content: string): Message => ({ role: 'user', content });
const assistant = (content: string): Message => ({ role: 'assistant', content });

/** What the stand-in judge concludes from each whole next-state message these conversations send. */
const VERDICTS = {
  thanksName: 'Perfect, Whiskers it is. Now suggest one for my dog.',
  thanksDerived: 'Nice, I will call my hamster that. What does he eat?',
  thanksNegative: 'Great, I will call her Luna. What should I feed her?',
  keyed: 'That works, thank you. Can you also give me a second option?',
  tripPlan: 'Lovely, that covers Monday. What about Tuesday?',
  tripWrong: 'No, I asked for museums, not restaurants. Please redo Tuesday.',
  tripEdited: 'Actually, make Tuesday a day trip to the coast instead.',
  tripAfterEdit: 'The coast sounds great, book it.',
  late: 'Sorry, I was away for a while. That worked, thank you!',
  tooLate: 'Back after a long weekend: yes, that answer was fine.',
};

describe('turn pairing as a user sees it', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let judge: TranscriptJudge;
  let worker: Worker;
  let running: Promise<void>;
  let store: FileSampleStore;
  let taskQueue: string;
  const gateways: RunningGateway[] = [];

  beforeAll(async () => {
    [env, dir] = await Promise.all([connectTestEnvironment(), mkdtemp(join(tmpdir(), 'turn-pairing-'))]);
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')) });
    judge = await startTranscriptJudge({
      verdicts: {
        [VERDICTS.thanksName]: { score: 1 },
        [VERDICTS.thanksDerived]: { score: 1 },
        [VERDICTS.thanksNegative]: { score: 1 },
        [VERDICTS.keyed]: { score: 1 },
        [VERDICTS.tripPlan]: { score: 1 },
        [VERDICTS.tripWrong]: { score: -1 },
        [VERDICTS.tripAfterEdit]: { score: 1 },
        [VERDICTS.late]: { score: 1 },
      },
    });
    taskQueue = uniqueTaskQueue('pairing');
    store = new FileSampleStore(join(dir, 'store'));
    worker = await createControlWorker(
      configWith({}),
      env.nativeConnection,
      env.client,
      { store },
      { workflowBundle: testWorkflowBundle() },
    );
    running = worker.run();
  }, 180_000);

  afterAll(async () => {
    for (const gateway of gateways) await gateway.close();
    worker?.shutdown();
    await running?.catch(() => undefined);
    await engine?.stop();
    await judge?.close();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  function configWith(session: NonNullable<OpenClawConfigInput['session']>): OpenClawConfig {
    const loaded = loadConfig(
      {},
      {
        runId: `pairing-${taskQueue}`.slice(0, 64),
        method: 'rl',
        dataDir: dir,
        engine: { url: engine.url },
        teacher: { url: engine.url },
        judge: { baseUrl: judge.url, model: 'judge-stand-in', votes: 1 },
        // No training step: what matters is which sample each turn becomes.
        training: { batchSize: 1_000 },
        gateway: { port: 0 },
        temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
        session,
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    return loaded.config;
  }

  /** A gateway whose sessions start with these settings, and a client of it. */
  async function gatewayWith(session: NonNullable<OpenClawConfigInput['session']>) {
    const gateway = await startGateway(configWith(session), { temporal: env.client, store, logger: false });
    gateways.push(gateway);
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    /** `sessionId` null: the client names no session (the gateway derives one). */
    return async (
      sessionId: string | null,
      messages: Message[],
      options: { stream?: boolean; done?: boolean; key?: string } = {},
    ): Promise<string> => {
      const headers = {
        ...(sessionId !== null && { 'X-Session-Id': sessionId }),
        ...(options.done && { 'X-Session-Done': 'true' }),
        ...(options.key && { 'Idempotency-Key': options.key }),
      };
      // No seed: a second request for the same messages gets another answer, as a regenerate does.
      const body = { model: 'tiny', messages, max_tokens: 8, ignore_eos: true } as Record<string, unknown>;
      if (!options.stream) {
        const completion = await client.chat.completions.create(
          body as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming,
          { headers },
        );
        return completion.choices[0]?.message.content ?? '';
      }
      const chunks = await client.chat.completions.create(
        { ...body, stream: true } as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming,
        { headers },
      );
      let content = '';
      for await (const chunk of chunks) content += chunk.choices[0]?.delta?.content ?? '';
      return content;
    };
  }

  async function sampleIdOf(sessionId: string, position: number, reply: string): Promise<string> {
    const record = await findRecordedTurn(store, scopedSessionId(LOCAL_TENANT, sessionId), position, reply);
    if (!record) throw new Error(`${sessionId}: no turn ${position} answered "${reply}"`);
    return record.sampleId;
  }

  /** Waits until every id is a sample or an exclusion; returns them. */
  async function settled(ids: string[]) {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const samples = new Map<string, TrainingSample>();
      const exclusions = new Map<string, SampleExclusion>();
      for (const id of ids) {
        const sample = await store.get<TrainingSample>(sampleKey(id));
        const exclusion = await store.get<SampleExclusion>(exclusionKey(id));
        if (sample) samples.set(id, sample);
        if (exclusion) exclusions.set(id, exclusion);
      }
      if (ids.every((id) => samples.has(id) || exclusions.has(id))) return { samples, exclusions };
      if (Date.now() > deadline)
        throw new Error(`not settled: ${ids.filter((id) => !samples.has(id) && !exclusions.has(id))}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Waits until the gateways' relays have delivered every recorded turn (the store's outbox is empty). */
  async function delivered(): Promise<void> {
    await expect
      .poll(async () => (await store.outbox.stats()).depth, { timeout: 30_000, interval: 50 })
      .toBe(0);
  }

  async function sessionStatus(sessionId: string): Promise<SessionStatus | null> {
    return env.client.workflow
      .getHandle(sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)))
      .query(sessionStatusQuery)
      .catch(() => null);
  }

  it('trains the regenerated answer the user continued and supersedes the one they replaced', async () => {
    const chat = await gatewayWith({ idleTimeoutMs: 600_000 });
    const sessionId = `regen-${taskQueue}`;
    const opening = [user('Suggest a name for my cat.')];
    const first = await chat(sessionId, opening);
    // The user regenerates (a retry without Idempotency-Key looks the same): another answer, streamed.
    const second = await chat(sessionId, opening, { stream: true });
    expect(second).not.toBe(first);
    const last = await chat(sessionId, [...opening, assistant(second), user(VERDICTS.thanksName)], {
      done: true,
    });

    const ids = {
      first: await sampleIdOf(sessionId, 1, first),
      second: await sampleIdOf(sessionId, 1, second),
      last: await sampleIdOf(sessionId, 2, last),
    };
    const { samples, exclusions } = await settled(Object.values(ids));
    expect(samples.get(ids.second)).toMatchObject({ reward: 1, kind: 'rl' });
    expect(exclusions.get(ids.first)?.reason).toBe('superseded');
    expect(exclusions.get(ids.first)?.detail).toContain(ids.second);
    expect(exclusions.get(ids.last)?.reason).toBe('no-next-state');
    expect(judge.nextStatesFor(second)).toEqual([VERDICTS.thanksName]);
    expect(judge.nextStatesFor(first)).toEqual([]);

    const handle = env.client.workflow.getHandle(sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)));
    expect(((await handle.result()) as SessionResult).end).toBe('done-signal');
    expect(await handle.query(sessionStatusQuery)).toMatchObject({ turnsScored: 3, turnsSuperseded: 1 });
    if (process.env.RECORD_HISTORIES) {
      await saveHistory(
        env,
        sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)),
        'session-workflow-superseded',
      );
      await saveHistory(env, scoreTurnWorkflowId(ids.first), 'score-turn-workflow-superseded');
    }
  });

  it('keeps a regenerated first reply of a client without session ids in its session, superseding the other', async () => {
    // A client that names no session regenerates its first reply and goes on from the second: when the derived
    // id hashed the reply, the regenerate opened a session of its own and the first reply was never settled.
    const chat = await gatewayWith({ idleTimeoutMs: 600_000 });
    const opening = [user(`Suggest a name for my hamster (${taskQueue}).`)];
    const first = await chat(null, opening);
    const second = await chat(null, opening, { stream: true });
    expect(second).not.toBe(first);
    const last = await chat(null, [...opening, assistant(second), user(VERDICTS.thanksDerived)], {
      done: true,
    });

    const sessionId = deriveSessionId(LOCAL_TENANT, `user:${opening[0]?.content}`);
    const ids = {
      first: await sampleIdOf(sessionId, 1, first),
      second: await sampleIdOf(sessionId, 1, second),
      last: await sampleIdOf(sessionId, 2, last),
    };
    const { samples, exclusions } = await settled(Object.values(ids));
    expect(samples.get(ids.second)).toMatchObject({ reward: 1, kind: 'rl' });
    expect(exclusions.get(ids.first)?.reason).toBe('superseded');
    expect(exclusions.get(ids.first)?.detail).toContain(ids.second);
    expect(judge.nextStatesFor(second)).toEqual([VERDICTS.thanksDerived]);
    const handle = env.client.workflow.getHandle(sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)));
    expect(((await handle.result()) as SessionResult).end).toBe('done-signal');
    expect(await handle.query(sessionStatusQuery)).toMatchObject({ turnsScored: 3, turnsSuperseded: 1 });
  });

  it('with `session.superseded: negative` trains the replaced answer with reward -1, without a judge', async () => {
    const chat = await gatewayWith({ idleTimeoutMs: 600_000, superseded: 'negative' });
    const sessionId = `negative-${taskQueue}`;
    const opening = [user('Suggest a name for my kitten.')];
    const first = await chat(sessionId, opening);
    const second = await chat(sessionId, opening);
    await chat(sessionId, [...opening, assistant(second), user(VERDICTS.thanksNegative)], { done: true });

    const ids = {
      first: await sampleIdOf(sessionId, 1, first),
      second: await sampleIdOf(sessionId, 1, second),
    };
    const { samples } = await settled(Object.values(ids));
    expect(samples.get(ids.first)).toMatchObject({
      reward: -1,
      kind: 'rl',
      judge: { supersededBy: ids.second },
    });
    expect(samples.get(ids.second)).toMatchObject({ reward: 1 });
    expect(judge.nextStatesFor(first)).toEqual([]);
    if (process.env.RECORD_HISTORIES)
      await saveHistory(env, scoreTurnWorkflowId(ids.first), 'score-turn-workflow-superseded-negative');
  });

  it('trains a retry with Idempotency-Key as the one turn it is', async () => {
    const chat = await gatewayWith({ idleTimeoutMs: 600_000 });
    const sessionId = `keyed-${taskQueue}`;
    const opening = [user('Give me one option for dinner.')];
    const first = await chat(sessionId, opening, { stream: true, key: `${sessionId}-1` });
    const retried = await chat(sessionId, opening, { stream: true, key: `${sessionId}-1` });
    expect(retried).toBe(first);
    await chat(sessionId, [...opening, assistant(first), user(VERDICTS.keyed)], { done: true });
    const id = await sampleIdOf(sessionId, 1, first);
    const { samples } = await settled([id]);
    expect(samples.get(id)?.reward).toBe(1);
    expect(judge.nextStatesFor(first)).toEqual([VERDICTS.keyed]);
    const status = await env.client.workflow
      .getHandle(sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)))
      .query(sessionStatusQuery);
    expect(status).toMatchObject({ turnsReceived: 2, turnsSuperseded: 0 });
  });

  it("pairs a branch with the turn it continues, never with the other branch's last turn", async () => {
    const chat = await gatewayWith({ idleTimeoutMs: 600_000 });
    const sessionId = `branch-${taskQueue}`;
    const m1 = [user('Plan a two-day trip to Lisbon, starting with Monday.')];
    const r1 = await chat(sessionId, m1);
    const m2 = [...m1, assistant(r1), user(VERDICTS.tripPlan)];
    const r2 = await chat(sessionId, m2);
    const r3 = await chat(sessionId, [...m2, assistant(r2), user(VERDICTS.tripWrong)]);
    // The user edits their last message instead of answering r3: a new branch from r2.
    const edited = [...m2, assistant(r2), user(VERDICTS.tripEdited)];
    const r3b = await chat(sessionId, edited);
    const r4 = await chat(sessionId, [...edited, assistant(r3b), user(VERDICTS.tripAfterEdit)], {
      done: true,
    });

    const ids = {
      r1: await sampleIdOf(sessionId, 1, r1),
      r2: await sampleIdOf(sessionId, 2, r2),
      r3: await sampleIdOf(sessionId, 3, r3),
      r3b: await sampleIdOf(sessionId, 3, r3b),
      r4: await sampleIdOf(sessionId, 4, r4),
    };
    const { samples, exclusions } = await settled(Object.values(ids));
    expect(judge.nextStatesFor(r1)).toEqual([VERDICTS.tripPlan]);
    expect(judge.nextStatesFor(r2)).toEqual([VERDICTS.tripWrong]);
    expect(judge.nextStatesFor(r3b)).toEqual([VERDICTS.tripAfterEdit]);
    // The abandoned branch's last reply was never judged against the new branch's message.
    expect(judge.nextStatesFor(r3)).toEqual([]);
    expect(samples.get(ids.r1)?.reward).toBe(1);
    expect(samples.get(ids.r2)?.reward).toBe(-1);
    expect(samples.get(ids.r3b)?.reward).toBe(1);
    expect(exclusions.get(ids.r3)?.reason).toBe('no-next-state');
    expect(exclusions.get(ids.r4)?.reason).toBe('no-next-state');
    expect(judge.unexpected).toEqual([]);
  });

  it('pairs a reply that comes after the idle close, within the reopen horizon', async () => {
    const chat = await gatewayWith({ idleTimeoutMs: 1_000, reopenHorizonMs: 120_000 });
    const sessionId = `reopen-${taskQueue}`;
    const opening = [user('How do I reset my router?')];
    const reply = await chat(sessionId, opening);
    await expect
      .poll(async () => (await sessionStatus(sessionId))?.phase, { timeout: 30_000, interval: 200 })
      .toBe('idle');
    const id = await sampleIdOf(sessionId, 1, reply);
    expect(await store.get(exclusionKey(id))).toBeUndefined();

    await chat(sessionId, [...opening, assistant(reply), user(VERDICTS.late)], { done: true });
    const { samples } = await settled([id]);
    expect(samples.get(id)?.reward).toBe(1);
    expect(judge.nextStatesFor(reply)).toEqual([VERDICTS.late]);
    const handle = env.client.workflow.getHandle(sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)));
    expect(((await handle.result()) as SessionResult).end).toBe('done-signal');
    expect(await handle.query(sessionStatusQuery)).toMatchObject({ reopened: 1, turnsScored: 2 });
    if (process.env.RECORD_HISTORIES)
      await saveHistory(
        env,
        sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)),
        'session-workflow-reopened',
      );
  });

  it('settles the last turn as no-next-state once the horizon passes; a later reply does not pair', async () => {
    const chat = await gatewayWith({ idleTimeoutMs: 1_000, reopenHorizonMs: 3_000 });
    const sessionId = `horizon-${taskQueue}`;
    const opening = [user('What is a good stretch for my back?')];
    const reply = await chat(sessionId, opening);
    const id = await sampleIdOf(sessionId, 1, reply);
    // Answered once durable; the gateway's relay starts the session workflow right after.
    await delivered();
    const handle = env.client.workflow.getHandle(sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)));
    expect(((await handle.result()) as SessionResult).end).toBe('horizon');
    expect((await settled([id])).exclusions.get(id)?.reason).toBe('no-next-state');
    if (process.env.RECORD_HISTORIES)
      await saveHistory(
        env,
        sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)),
        'session-workflow-horizon',
      );

    // Past the horizon: the reply starts a new run of the session and trains nothing for the settled turn.
    const late = await chat(sessionId, [...opening, assistant(reply), user(VERDICTS.tooLate)], {
      done: true,
    });
    const lateId = await sampleIdOf(sessionId, 2, late);
    expect((await settled([lateId])).exclusions.get(lateId)?.reason).toBe('no-next-state');
    expect(
      (
        (await env.client.workflow
          .getHandle(sessionWorkflowId(scopedSessionId(LOCAL_TENANT, sessionId)))
          .result()) as SessionResult
      ).end,
    ).toBe('done-signal');
    expect(await store.get(sampleKey(id))).toBeUndefined();
    expect((await store.get<SampleExclusion>(exclusionKey(id)))?.reason).toBe('no-next-state');
    expect(judge.nextStatesFor(reply)).toEqual([]);
  });
});
