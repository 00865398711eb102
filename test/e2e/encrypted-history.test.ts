// Conversations are private data: after a real conversation through the gateway has been judged, hinted and
// turned into a sample, Temporal's raw history, read through the plain gRPC client with no codec, holds
// none of the conversation's text, the judge's reply or the hint; every payload in it is encrypted. Read
// through the codec, the same history does hold the judge reply and the hint (so the check is not vacuous),
// and it replays with the key ring, not without it.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { loadConfig } from '../../core/config.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { type RunningGateway, startGateway } from '../../gateway/main.js';
import { isEncrypted } from '../../security/payload-codec.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { sessionWorkflowId, trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingStatusQuery } from '../../workflows/training-signals.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import {
  connectTestEnvironment,
  historyValue,
  testEncryptionPlugin,
  uniqueTaskQueue,
} from '../support/temporal.js';
import { createTestControlWorker, testWorkflowBundle } from '../support/workflow-bundle.js';

type History = temporal.api.history.v1.IHistory;

// What the fake judge answers for a next state that says "thanks" (test/support/fake-judge-server.ts).
const JUDGE_REPLY = 'The user is satisfied.';
const HINT = 'mention the weather explicitly';

/** Every string and every byte string in `value`, as text: what someone reading the raw history sees. */
function everyText(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('latin1'));
  else if (Array.isArray(value)) for (const item of value) everyText(item, out);
  else if (value && typeof value === 'object') for (const item of Object.values(value)) everyText(item, out);
  return out;
}

/** Every payload (an object with `metadata` and `data`) in a history. */
function everyPayload(
  value: unknown,
  out: { metadata?: Record<string, Uint8Array>; data?: Uint8Array }[] = [],
) {
  if (Array.isArray(value)) for (const item of value) everyPayload(item, out);
  else if (value && typeof value === 'object' && !(value instanceof Uint8Array)) {
    const record = value as Record<string, unknown>;
    if (record.metadata && typeof record.metadata === 'object' && 'encoding' in record.metadata)
      out.push(record as (typeof out)[number]);
    else for (const item of Object.values(record)) everyPayload(item, out);
  }
  return out;
}

/** A `patched()` marker, or the upsert of the search attribute that lists a workflow's patches. */
function isPatchRecord(event: NonNullable<History['events']>[number]): boolean {
  if (event.markerRecordedEventAttributes?.markerName === 'core_patch') return true;
  const fields = event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
  return fields ? Object.keys(fields).every((name) => name === 'TemporalChangeVersion') : false;
}

describe('Temporal history holds no private text', () => {
  let env: TestWorkflowEnvironment;
  let raw: Connection;
  let dir: string;
  let engine: EngineProcess;
  let judge: FakeJudge;
  let gateway: RunningGateway | undefined;
  const workflowIds: string[] = [];
  let session = '';
  const secret = `my landlord at 12 Elm Street keeps the deposit ${Math.random().toString(36).slice(2)}`;
  const nextState = `thanks, that helps with the landlord ${Math.random().toString(36).slice(2)}`;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    if (!testEncryptionPlugin())
      throw new Error('this test needs the run key ring (not with RECORD_HISTORIES)');
    // The plain gRPC client: no plugin, no codec; what Temporal itself stores.
    raw = await Connection.connect({ address: inject('temporalAddress') });
    dir = await mkdtemp(join(tmpdir(), 'encrypted-history-'));
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')), trainer: true });
    judge = await startFakeJudge();
  }, 180_000);

  afterAll(async () => {
    await gateway?.close();
    await engine?.stop();
    await judge?.close();
    await raw?.close();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('judges, hints and stores a turn while history stays ciphertext', async () => {
    const taskQueue = uniqueTaskQueue('encrypted');
    const loaded = loadConfig(
      {},
      {
        runId: `enc-${taskQueue}`.slice(0, 64),
        method: 'combine',
        dataDir: join(dir, 'data'),
        engine: { url: engine.url },
        teacher: { url: engine.url },
        judge: { baseUrl: judge.url, model: 'fake-judge' },
        training: { batchSize: 100 },
        gateway: { port: 0 },
        temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    const config = loaded.config;
    const worker = await createTestControlWorker(config, env, {
      store: new FileSampleStore(join(config.dataDir, 'store')),
    });
    const running = worker.run();
    try {
      gateway = await startGateway(config, { temporal: env.client, logger: false });
      const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      session = `private-${taskQueue}`;
      const chat = async (messages: ChatCompletionMessageParam[], done = false) =>
        (
          await client.chat.completions.create(
            { model: 'tiny', messages, max_tokens: 6, temperature: 1, seed: 1 },
            { headers: { 'X-Session-Id': session, ...(done && { 'X-Session-Done': 'true' }) } },
          )
        ).choices[0]?.message as ChatCompletionMessageParam;
      const first: ChatCompletionMessageParam[] = [{ role: 'user', content: secret }];
      const reply = await chat(first);
      await chat([...first, reply, { role: 'user', content: nextState }], true);

      const training = env.client.workflow.getHandle(trainingWorkflowId(config.runId));
      const deadline = Date.now() + 120_000;
      for (;;) {
        const status = await training.query(trainingStatusQuery).catch(() => null);
        // Turn 1 becomes a sample (thanks: +1 and a hint), turn 2 an exclusion (no next state).
        if (status && status.pendingSamples + status.samplesExcluded === 2 && status.pendingSamples === 1)
          break;
        if (Date.now() > deadline) throw new Error(`the turns did not settle: ${JSON.stringify(status)}`);
        await new Promise((r) => setTimeout(r, 300));
      }
      // Visibility lists a workflow a little after it starts (longer on a loaded server).
      await vi.waitFor(
        async () => {
          workflowIds.length = 0;
          for await (const execution of env.client.workflow.list({ query: `TaskQueue = '${taskQueue}'` }))
            workflowIds.push(execution.workflowId);
          expect(workflowIds).toEqual(
            expect.arrayContaining([
              sessionWorkflowId(scopedSessionId(LOCAL_TENANT, session)),
              trainingWorkflowId(config.runId),
            ]),
          );
          expect(workflowIds.some((id) => id.startsWith('score-'))).toBe(true);
        },
        { timeout: 30_000, interval: 250 },
      );
    } finally {
      worker.shutdown();
      await running.catch(() => undefined);
    }
  }, 240_000);

  const rawHistory = async (workflowId: string): Promise<History> => {
    const events: NonNullable<History['events']> = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await raw.workflowService.getWorkflowExecutionHistory({
        namespace: inject('temporalNamespace'),
        execution: { workflowId },
        nextPageToken,
      });
      events.push(...(page.history?.events ?? []));
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    return { events };
  };

  it('shows the plain gRPC client no conversation text, judge reply or hint, only encrypted payloads', async () => {
    let payloads = 0;
    for (const workflowId of workflowIds) {
      const history = await rawHistory(workflowId);
      const text = everyText(history).join('\n');
      for (const needle of [secret, '12 Elm Street', nextState, 'landlord', JUDGE_REPLY, HINT, '\\boxed'])
        expect(text, `${needle} in ${workflowId}`).not.toContain(needle);
      // Versioning markers (`patched()`: the patch id) and the search attribute listing the patches are the
      // SDK's own and never pass through a codec; they name code versions only (the text check above covers
      // them too).
      const found = (history.events ?? [])
        .filter((event) => !isPatchRecord(event))
        .flatMap((event) => everyPayload(event));
      for (const payload of found) expect(isEncrypted(payload), workflowId).toBe(true);
      payloads += found.length;
    }
    expect(payloads).toBeGreaterThan(10);
  });

  it('holds the judge reply and the hint for a client with the key, and replays only with it', async () => {
    const scoreId = workflowIds.find((id) => id.startsWith('score-')) as string;
    const history = await env.client.workflow.getHandle(scoreId).fetchHistory();
    const values = await Promise.all(
      everyPayload(history).map((payload) => historyValue(env.client, payload)),
    );
    const decoded = JSON.stringify(values);
    expect(decoded).toContain(JUDGE_REPLY);
    expect(decoded).toContain(HINT);
    expect(decoded).not.toContain(secret);

    const plugin = testEncryptionPlugin();
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: testWorkflowBundle(), replayName: scoreId, plugins: plugin ? [plugin] : [] },
        history,
      ),
    ).resolves.toBeUndefined();
    await expect(
      Worker.runReplayHistory({ workflowBundle: testWorkflowBundle(), replayName: scoreId }, history),
    ).rejects.toThrow();
  }, 120_000);
});
