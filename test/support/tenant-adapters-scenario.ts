// A policy per tenant on real parts: the policy engine started as `openclaw-rl engine` starts it (the reference
// engine serving several LoRA adapters on one base and training each on its own routes; or vLLM's CPU build
// serving them, loaded at run time, with the reference trainer beside it), the real gateway with two keys of two
// tenants, the run's Temporal server and a control worker. Scenario: Alice and Bob share one gateway and one
// base; Alice's thumbs-down trains her adapter only, so what she is served moves while what Bob is served stays
// the same token by token; Bob's then trains his, and Alice's stays; neither can ask for the other's adapter,
// nor see it listed; after the engine, the control worker and the gateway restart, each is served their own
// adapter again, and Alice's run trains on from where it was.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LaunchedEngine, launchEngine } from '../../cli/engine-launch.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { adapterRunId } from '../../core/tenant-adapters.js';
import { type ControlStack, startControlStack, untilTrainingStatus } from './control-stack.js';
import { freePortPair } from './free-port.js';
import { connectTestEnvironment, uniqueTaskQueue } from './temporal.js';

/**
 * Two answers are the same when their tokens are and their log-probs agree to 1e-4: a prompt prefix the engine
 * reuses from its cache is computed in another order than a fresh one, which moves a log-prob by ~1e-6.
 */
function expectSame(actual: Probe, expected: Probe): void {
  expect(actual.tokens).toEqual(expected.tokens);
  expect(maxDifference(actual, expected)).toBeLessThan(1e-4);
}

/** Training moved it: some log-prob by far more than the engine's own noise. */
function expectMoved(actual: Probe, before: Probe): void {
  expect(actual.tokens.length === before.tokens.length ? maxDifference(actual, before) : 1).toBeGreaterThan(
    1e-3,
  );
}

function maxDifference(a: Probe, b: Probe): number {
  return Math.max(...a.logprobs.map((value, i) => Math.abs(value - (b.logprobs[i] ?? Number.NaN))));
}

const KEYS = { alice: 'key-of-alice-0123456789', bob: 'key-of-bob-0123456789' } as const;
type Tenant = keyof typeof KEYS;

interface Probe {
  tokens: string[];
  logprobs: number[];
}

/** The scenario on one engine kind (each kind's test file runs it in a process of its own). */
export function describeTenantAdapters(kind: 'reference' | 'vllm'): void {
  describe(`tenants' own adapters through the real gateway on the ${kind} engine`, () => {
    let env: TestWorkflowEnvironment;
    let dir: string;
    let config: OpenClawConfig;
    let engine: LaunchedEngine | null = null;
    let stack: ControlStack | null = null;

    beforeAll(async () => {
      env = await connectTestEnvironment();
      dir = await mkdtemp(join(tmpdir(), 'tenant-adapters-'));
      await mkdir(join(dir, 'keys'), { recursive: true });
      await writeFile(join(dir, 'keys', 'api-keys'), `${KEYS.alice} alice\n${KEYS.bob} bob\n`, {
        mode: 0o600,
      });
      const taskQueue = uniqueTaskQueue('tenant-adapters');
      // vLLM takes the port, the reference trainer beside it the next one.
      const port = await freePortPair(1);
      const loaded = loadConfig(
        {},
        {
          // A run id of its own: the test files share one Temporal server.
          runId: `household-${taskQueue}`.slice(0, 64),
          method: 'rl',
          dataDir: dir,
          engine: { kind, url: `http://127.0.0.1:${port}` },
          // No judge can vote here: what trains, trains because a person rated it.
          judge: { baseUrl: `http://127.0.0.1:${port}/v1`, model: 'tiny', votes: 1, maxTokens: 8 },
          training: { batchSize: 1, learningRate: 2e-3 },
          adapters: { tenants: ['*'], rank: 4, maxLoaded: 4 },
          gateway: { port: 0 },
          temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
        },
      );
      if (!loaded.ok) throw new Error(loaded.error);
      config = loaded.config;
      engine = await launchEngine(config);
      stack = await startControlStack(config, env);
    }, 300_000);

    afterAll(async () => {
      await stack?.close();
      for (const process of [...(engine?.processes ?? [])].reverse()) await process.stop();
      await env?.teardown();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    const client = (tenant: Tenant) =>
      new OpenAI({ baseURL: `${stack?.gateway.url}/v1`, apiKey: KEYS[tenant], maxRetries: 0 });

    /** What `tenant` is served for a fixed question, greedy, with each token's log-prob (a side turn: not trained). */
    async function probe(tenant: Tenant): Promise<Probe> {
      const response = await client(tenant).chat.completions.create(
        {
          model: 'tiny',
          messages: [{ role: 'user', content: 'Which colour is the sky?' }],
          max_tokens: 6,
          temperature: 0,
          logprobs: true,
        },
        { headers: { 'X-Session-Id': 'probe', 'X-Turn-Type': 'side' } },
      );
      const content = response.choices[0]?.logprobs?.content ?? [];
      return { tokens: content.map((c) => c.token), logprobs: content.map((c) => c.logprob) };
    }

    /** One rated turn of `tenant`: a reply, then a thumbs-down on it, which trains its run's next version. */
    async function rateOneTurn(tenant: Tenant, session: string): Promise<void> {
      const response = (await client(tenant).chat.completions.create(
        { model: 'tiny', messages: [{ role: 'user', content: `Say something, ${tenant}.` }], max_tokens: 6 },
        // Session ids of this run only: every test file shares one Temporal server, and its workflow ids.
        { headers: { 'X-Session-Id': `${session}-${config.runId}` } },
      )) as OpenAI.Chat.ChatCompletion & { turn_id?: string };
      const answer = await fetch(`${stack?.gateway.url}/v1/feedback`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS[tenant]}` },
        body: JSON.stringify({ turn_id: response.turn_id, rating: -1 }),
      });
      expect(answer.status).toBe(200);
    }

    const runOf = (tenant: Tenant) => adapterRunId(config.runId, tenant);

    /** Until `tenant`'s run published `version` and the gateway routes to it (it rereads the engine's list each second). */
    async function untilVersion(tenant: Tenant, version: number): Promise<void> {
      await untilTrainingStatus(env.client, runOf(tenant), (s) => s.policyVersion >= version, 180_000);
      await new Promise((resolve) => setTimeout(resolve, 1_200));
    }

    it("each tenant's feedback trains only its own adapter, and each is served only by its own", async () => {
      const before = { alice: await probe('alice'), bob: await probe('bob') };
      // Before anything trained, both are served by the base: the same answer.
      expectSame(before.alice, before.bob);

      await rateOneTurn('alice', 'alice-1');
      await untilVersion('alice', 1);
      const afterAlice = { alice: await probe('alice'), bob: await probe('bob') };
      expectMoved(afterAlice.alice, before.alice);
      expectSame(afterAlice.bob, before.bob);

      await rateOneTurn('bob', 'bob-1');
      await untilVersion('bob', 1);
      const afterBob = { alice: await probe('alice'), bob: await probe('bob') };
      expectMoved(afterBob.bob, before.bob);
      expectSame(afterBob.alice, afterAlice.alice);

      // The shared run trained nothing: every turn went to its tenant's own run.
      const shared = await env.client.workflow
        .getHandle(`training-${config.runId}`)
        .describe()
        .catch(() => null);
      expect(shared).toBeNull();
    }, 400_000);

    it("nobody is served by, or sees, another tenant's adapter", async () => {
      const refused = await client('bob')
        .chat.completions.create({
          model: 'alice',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 2,
        })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
      expect((refused as InstanceType<typeof OpenAI.NotFoundError>).message).toMatch(
        /`alice` does not exist/,
      );
      const sglangSpelling = await client('bob')
        .chat.completions.create({
          model: 'tiny:alice',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 2,
        })
        .catch((error: unknown) => error);
      expect(sglangSpelling).toBeInstanceOf(OpenAI.NotFoundError);

      // A refused request holds no Idempotency-Key: the same key with a model of his own is answered.
      const key = { headers: { 'Idempotency-Key': 'bob-asks-once' } };
      const once = await client('bob')
        .chat.completions.create(
          { model: 'alice', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 },
          key,
        )
        .catch((error: unknown) => error);
      expect(once).toBeInstanceOf(OpenAI.NotFoundError);
      const retried = await client('bob').chat.completions.create(
        { model: 'bob', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 },
        key,
      );
      expect(retried.choices).toHaveLength(1);

      const listed = (await client('bob').models.list()).data.map((m) => m.id);
      expect(listed).toContain('bob');
      expect(listed).not.toContain('alice');
    });

    it('after the engine, the control worker and the gateway restart, each tenant is served its own adapter again, and training goes on from it', async () => {
      const before = { alice: await probe('alice'), bob: await probe('bob') };
      for (const process of [...(engine?.processes ?? [])].reverse()) await process.stop();
      engine = await launchEngine(config);
      const restarted = { alice: await probe('alice'), bob: await probe('bob') };
      expectSame(restarted.alice, before.alice);
      expectSame(restarted.bob, before.bob);

      // The control worker and the gateway restart too; the restarted trainer lost Alice's adapter: her run
      // brings it back from its checkpoint and trains v2 on it.
      await stack?.close();
      stack = await startControlStack(config, env);
      await rateOneTurn('alice', 'alice-2');
      await untilVersion('alice', 2);
      const after = { alice: await probe('alice'), bob: await probe('bob') };
      expectMoved(after.alice, before.alice);
      expectSame(after.bob, before.bob);
    }, 400_000);
  });
}
