// Group training on real parts: the real gateway with two tenants' keys, the reference engine (serving and
// training), the run's Temporal server and a control worker. Scenario: Alice and Bob share one policy and Alice
// talks three times as much; with a cap of one sample per tenant in a batch of two, the first version holds one
// of each instead of two of Alice's, her other samples wait (none is lost) and train in the next version, her
// samples weigh half in the loss, and the lineage says who shaped each version and whose samples were held back.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { lineageQuery, pauseUpdate, resumeUpdate } from '../../workflows/training-signals.js';
import { type ControlStack, startControlStack, untilTrainingStatus } from '../support/control-stack.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';

const KEYS = { alice: 'group-key-of-alice-0123', bob: 'group-key-of-bob-0123' } as const;
type Tenant = keyof typeof KEYS;

describe('group training: one policy, several people, a cap per person in each batch', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let config: OpenClawConfig;
  let stack: ControlStack;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'group-training-'));
    await mkdir(join(dir, 'keys'), { recursive: true });
    await writeFile(join(dir, 'keys', 'api-keys'), `${KEYS.alice} alice\n${KEYS.bob} bob\n`, { mode: 0o600 });
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')), trainer: true });
    const taskQueue = uniqueTaskQueue('group-training');
    const loaded = loadConfig(
      {},
      {
        runId: `family-${taskQueue}`.slice(0, 64),
        method: 'rl',
        dataDir: dir,
        engine: { url: engine.url },
        // No judge can vote here: what trains, trains because a person rated it.
        judge: { baseUrl: `${engine.url}/v1`, model: 'tiny', votes: 1, maxTokens: 8 },
        training: { batchSize: 2, learningRate: 1e-3, maxSamplesPerTenant: 1, tenantWeights: { alice: 0.5 } },
        gateway: { port: 0 },
        temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    config = loaded.config;
    stack = await startControlStack(config, env);
  }, 180_000);

  afterAll(async () => {
    await stack?.close();
    await engine?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** One turn of `tenant` and a thumbs-down on it: a sample for the shared run, at once. */
  async function rateOneTurn(tenant: Tenant, session: string): Promise<void> {
    const openai = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: KEYS[tenant], maxRetries: 0 });
    const response = (await openai.chat.completions.create(
      { model: 'tiny', messages: [{ role: 'user', content: `A question from ${tenant}.` }], max_tokens: 6 },
      // Session ids of this run only: every test file shares one Temporal server, and its workflow ids.
      { headers: { 'X-Session-Id': `${session}-${config.runId}` } },
    )) as OpenAI.Chat.ChatCompletion & { turn_id?: string };
    const answer = await fetch(`${stack.gateway.url}/v1/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS[tenant]}` },
      body: JSON.stringify({ turn_id: response.turn_id, rating: -1 }),
    });
    expect(answer.status).toBe(200);
  }

  it("a heavy user's samples wait their turn, weigh what they are set to, and the lineage says who shaped each version", async () => {
    const run = env.client.workflow.getHandle(trainingWorkflowId(config.runId));
    // The run starts with Alice's first sample; held paused, it gathers everyone's before a batch forms.
    await rateOneTurn('alice', 'alice-1');
    await untilTrainingStatus(env.client, config.runId, (s) => s.pendingSamples === 1);
    await run.executeUpdate(pauseUpdate);
    await rateOneTurn('alice', 'alice-2');
    await rateOneTurn('alice', 'alice-3');
    // Samples arrive as they are scored, each session on its own: Bob's must come after all of Alice's.
    await untilTrainingStatus(env.client, config.runId, (s) => s.pendingSamples === 3);
    await rateOneTurn('bob', 'bob-1');
    await untilTrainingStatus(env.client, config.runId, (s) => s.pendingSamples === 4);
    await run.executeUpdate(resumeUpdate);

    const status = await untilTrainingStatus(env.client, config.runId, (s) => s.policyVersion >= 2, 180_000);
    expect(status.samplesTrained).toBe(4);
    const [v1] = await run.query(lineageQuery, { version: 1 });
    const [v2] = await run.query(lineageQuery, { version: 2 });
    // Without the cap, v1 would be Alice's first two.
    expect(v1?.tenants).toEqual({ alice: 1, bob: 1 });
    expect(v1?.heldBack).toEqual({ alice: 1 });
    expect(v1?.weights).toEqual({ alice: 0.5 });
    // Nobody else waits any more: Alice's held-back samples fill the next batch, none lost.
    expect(v2?.tenants).toEqual({ alice: 2 });
    expect(new Set([...(v1?.sampleIds ?? []), ...(v2?.sampleIds ?? [])]).size).toBe(4);
  }, 300_000);
});
