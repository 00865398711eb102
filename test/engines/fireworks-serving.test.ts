// Scenario: an operator with OPENCLAW_TRAINER=fireworks points the gateway at the Fireworks sidecar. A chat turn
// must be sampled on the deployment from the prompt ids the chat template renders, and recorded with exactly
// the ids and log-probs the deployment sampled (a re-tokenised response would train on tokens the policy never
// produced); a published step must be what the deployment then serves, under its version. Fireworks' cloud is
// the DOUBLE (test/support/python/fireworks_cloud_double.py: its deployment answers the completions endpoint
// over real HTTP); the sidecar, its runner and the SDK's DeploymentSampler that parses the answers are real.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import type { FireworksSidecarProcess } from '../../activities/trainer-backends/fireworks-sidecar-process.js';
import { FireworksTrainerBackend } from '../../activities/trainer-backends/fireworks-trainer.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import { makeTinyModel } from '../../engines/reference-engine-process.js';
import { describeEngineContract } from '../contracts/engine-contract.js';
import { startTestGateway, terminateSessions, uniqueSessionId } from '../gateway/gateway-fixture.js';
import {
  FIREWORKS_DOUBLE_DEPLOYMENT,
  fireworksDoubleCompletions,
  startFireworksSidecarWithDouble,
} from '../support/fireworks-cloud-double.js';
import { freePort } from '../support/free-port.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { findRecordedTurn } from '../support/turn-lookup.js';

interface Served {
  dir: string;
  store: string;
  sidecar: FireworksSidecarProcess;
  /** Exports of the base weights and of the weights after one step, as the training workflow makes them. */
  baseWeights: string;
  otherWeights: string;
}

// One sidecar (and one cloud) for the file: starting one imports torch and the SDK (seconds).
let served: Promise<Served> | undefined;
function serve(): Promise<Served> {
  served ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'openclaw-fireworks-serving-'));
    const store = join(dir, 'cloud');
    // The base model's tokenizer and chat template, held locally (a tiny one built here).
    const tokenizer = await makeTinyModel(join(dir, 'tokenizer'));
    const sidecar = await startFireworksSidecarWithDouble(store, [dir], {
      tokenizer,
      inferencePort: await freePort(),
      servedModelName: 'tiny',
    });
    const trainer = new FireworksTrainerBackend(sidecar.url);
    const baseWeights = join(dir, 'v0');
    await trainer.exportForServing(baseWeights);
    const sample = {
      tokens: [11, 12, 13, 21, 22, 23],
      responseLength: 3,
      lossMask: [1, 1, 1],
      rolloutLogProbs: [-8, -8, -8],
      reward: 1,
    };
    await trainer.trainStep('fw-serving/step-1', [sample], defaultLossConfig, {
      ...defaultOptimizerConfig,
      learningRate: 0.5,
    });
    const otherWeights = join(dir, 'v1');
    await trainer.exportForServing(otherWeights);
    return { dir, store, sidecar, baseWeights, otherWeights };
  })();
  return served;
}

afterAll(async () => {
  const s = await served;
  await s?.sidecar.stop();
  if (s) await rm(s.dir, { recursive: true, force: true });
});

describe('gateway turns served by the Fireworks deployment (cloud double)', () => {
  let env: TestWorkflowEnvironment;
  const sessions = new Set<string>();

  beforeAll(async () => {
    [env] = await Promise.all([connectTestEnvironment(), serve()]);
  }, 120_000);

  afterAll(async () => {
    if (env) {
      await terminateSessions(env, sessions);
      await env.teardown();
    }
  });

  it('records a turn with exactly the ids and log-probs the deployment sampled', async () => {
    const { sidecar, store } = await serve();
    const gateway = await startTestGateway({ engineUrl: sidecar.url, client: env.client });
    try {
      const sessionId = uniqueSessionId('fireworks');
      const scoped = scopedSessionId(LOCAL_TENANT, sessionId);
      sessions.add(scoped);
      const before = (await fireworksDoubleCompletions(store)).length;
      const completion = await gateway.openai().chat.completions.create(
        {
          model: 'tiny',
          messages: [{ role: 'user', content: 'Name three colours.' }],
          max_tokens: 6,
          seed: 11,
        },
        { headers: { 'X-Session-Id': sessionId } },
      );
      expect(completion.choices[0]?.finish_reason).toBe('length');
      const recorded = await findRecordedTurn(gateway.store, scoped, 1);
      const sampled = (await fireworksDoubleCompletions(store)).slice(before);
      // One request reached the deployment: the rendered prompt ids in, the sampled ids out, recorded as sent.
      expect(sampled).toHaveLength(1);
      expect(sampled[0]?.model).toBe(`accounts/double-account/deployments/${FIREWORKS_DOUBLE_DEPLOYMENT}`);
      expect(recorded?.promptIds).toEqual(sampled[0]?.prompt);
      expect(recorded?.responseIds).toEqual(sampled[0]?.completion_token_ids);
      expect(recorded?.responseIds).toHaveLength(6);
      // The untrained deployment is uniform over the double's 4096 ids: each sampled id's log-prob is log(1/4096).
      expect(recorded?.responseLogProbs).toHaveLength(6);
      for (const lp of recorded?.responseLogProbs ?? []) expect(lp).toBeCloseTo(Math.log(1 / 4096), 5);
      expect(recorded?.policyVersion).toBe(0);
      await gateway.delivered();
    } finally {
      await gateway.close();
    }
  });
});

describeEngineContract('fireworks (sidecar sampling on the deployment of the cloud double)', async () => {
  const { sidecar, baseWeights, otherWeights } = await serve();
  return {
    adapter: new ReferenceAdapter(sidecar.url),
    model: 'tiny',
    baseWeights,
    otherWeights,
    // The file's afterAll stops the sidecar.
    async close() {},
  };
});
