// Track 2 GUI steps on a vision-language policy through the engine's token path: the real reference engine
// serving the tiny VLM, a filesystem store, the real policy, agentic and training activities.
// Scenario: a GUI episode's policy reads the opening screenshot and the screenshot after its last action. The
// step must be sampled from those pixels (the prompt ids hold each screenshot's pad tokens), its record must
// keep the screenshots by digest (never inline), and its training sample must train with them, so the trainer
// scores the sampled tokens as the engine sampled them. What goes wrong without it: the sample trains the pads
// with no pixels (a prompt the policy never saw), or a text-only policy answers as if it saw nothing.

import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgenticActivities } from '../../activities/agentic-activities.js';
import { createPolicyActivities } from '../../activities/policy-step.js';
import { type RolloutStepRecord, rolloutKeys } from '../../activities/rollout-records.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { createTrainingActivities } from '../../activities/training-activities.js';
import { imageStoreKey, type StoredImage } from '../../core/image-parts.js';
import { lossSettingsSchema, optimizerSettingsSchema } from '../../core/loss-settings.js';
import { policySchema } from '../../core/rollout-settings.js';
import { sampleKey } from '../../core/turn-record.js';
import type { TrainingSample } from '../../core/types.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import {
  type EngineProcess,
  makeTinyVlm,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { COMPUTER_USE_TOOL } from '../../environments/gui/computer-use.js';
import { guiOpeningMessages } from '../../environments/gui/gui-prompts.js';
import { createEnvironmentRegistry } from '../../environments/registry.js';
import { imageDigestOf } from '../../store/image-blobs.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { type EngineStack, startEngineStack } from '../gateway/gateway-fixture.js';
import { pngDataUrl, tinyPng } from '../support/tiny-png.js';

// 56x56: four pad tokens each on the tiny VLM.
const OPENING = tinyPng([240, 240, 240], 56);
const AFTER_CLICK = tinyPng([20, 20, 200], 56);

describe('GUI steps on a vision-language policy (engine token path)', () => {
  let stack: EngineStack;
  let vlm: EngineProcess;
  let store: FileSampleStore;

  beforeAll(async () => {
    stack = await startEngineStack('vlm-policy-step');
    vlm = await startReferenceEngine({ model: await makeTinyVlm(join(stack.dir, 'vlm')), trainer: true });
    store = new FileSampleStore(join(stack.dir, 'store'));
  }, 240_000);

  afterAll(async () => {
    await vlm?.stop();
    await stack?.close();
  });

  /** A GUI rollout after one click: the opening screenshot, the click, and the screenshot it left. */
  async function resetAfterClick(rolloutId: string): Promise<void> {
    const call = {
      id: 'call_0',
      type: 'function',
      function: { name: 'computer_use', arguments: '{"action":"left_click","coordinate":[10,10]}' },
    };
    await store.put(rolloutKeys.reset(rolloutId), {
      messages: [
        ...guiOpeningMessages('Close the clock.', pngDataUrl(OPENING)),
        { role: 'assistant', content: '', tool_calls: [call] },
        {
          role: 'tool',
          tool_call_id: 'call_0',
          name: 'computer_use',
          content: [
            { type: 'text', text: 'Clicked.' },
            { type: 'image_url', image_url: { url: pngDataUrl(AFTER_CLICK) } },
          ],
        },
      ],
      tools: [COMPUTER_USE_TOOL],
    });
  }

  const policyOn = (url: string) =>
    policySchema.parse({ url, sampling: { maxNewTokens: 6, temperature: 1, seed: 5 } });

  it('samples from the screenshots, keeps them by digest, and trains the step with them', async () => {
    const rolloutId = `vlm-gui-${Date.now().toString(36)}`;
    await resetAfterClick(rolloutId);
    const policy = createPolicyActivities({ store });
    const step = await policy.policyStep({
      rolloutId,
      step: 0,
      policy: policyOn(vlm.url),
      contextBudgetTokens: 4096,
    });
    expect(step.responseTokens).toBeGreaterThan(0);

    const record = await store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, 0));
    if (!record) throw new Error('no step record');
    const [imagePad] = await new ReferenceAdapter(vlm.url).tokenize('<|image_pad|>');
    expect(record.promptIds.filter((id) => id === imagePad)).toHaveLength(8);
    const refs = [OPENING, AFTER_CLICK].map((png) => ({
      digest: imageDigestOf(png),
      mediaType: 'image/png',
    }));
    expect(record.images).toEqual(refs);
    // The record names the screenshots; their bytes are stored once, apart.
    expect(JSON.stringify(record)).not.toContain(AFTER_CLICK.toString('base64').slice(0, 24));
    const kept = await store.get<StoredImage>(imageStoreKey(imageDigestOf(AFTER_CLICK)));
    expect(kept).toEqual({ mediaType: 'image/png', data: AFTER_CLICK.toString('base64') });

    const agentic = createAgenticActivities({ store, registry: createEnvironmentRegistry({}, []) });
    const runId = `${rolloutId}-run`;
    const assembled = await agentic.assembleStepSamples({
      runId,
      stepId: `${runId}:1`,
      step: 1,
      advantage: 'grpo',
      judgeCoef: null,
      groups: [
        {
          groupId: 'g0',
          taskId: 'xclock-close',
          complete: true,
          rollouts: [{ rolloutId, status: 'COMPLETED', reward: 1, steps: 1, stepScores: null }],
        },
      ],
    });
    const [sampleId] = assembled.sampleIds ?? [];
    if (!sampleId) throw new Error('no sample');
    const sample = await store.get<TrainingSample>(sampleKey(sampleId));
    expect(sample?.images).toEqual(refs);

    const training = createTrainingActivities({
      store,
      trainer: new ReferenceTrainerBackend(vlm.url),
      serving: new ReferenceAdapter(vlm.url),
      checkpointDir: join(stack.dir, 'checkpoints'),
    });
    const metrics = await training.trainStep({
      runId,
      stepId: `${runId}:1`,
      sampleIds: [sampleId],
      method: 'rl',
      loss: lossSettingsSchema.parse({}),
      optimizer: optimizerSettingsSchema.parse({ learningRate: 1e-2 }),
      useRolloutLogprobs: false,
      resume: { lastStepId: null, lastCheckpoint: null },
    });
    // The trainer's log-probs of the sampled tokens, with the screenshots, are the engine's.
    expect(metrics.train_rollout_logprob_abs_diff).toBeLessThan(1e-4);
  });

  it('a text-only policy refuses the screenshot once, naming why', async () => {
    const rolloutId = `text-gui-${Date.now().toString(36)}`;
    await resetAfterClick(rolloutId);
    const policy = createPolicyActivities({ store });
    const refused = await policy
      .policyStep({ rolloutId, step: 0, policy: policyOn(stack.engine.url), contextBudgetTokens: 4096 })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect(refused).toMatchObject({ nonRetryable: true });
    expect((refused as Error).message).toMatch(/does not accept images/);
  });
});
