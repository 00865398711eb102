// A screenshot turn of a vision-language policy trains with its image. The engine (the tiny Qwen2.5-VL,
// `make-tiny-vlm`) answers an image request; the turn is kept with `image_ref` parts and the bytes once in the
// filesystem store; the training activity reads the bytes by digest and the reference trainer scores the exact
// served ids with them. What goes wrong without it: the sample reaches the trainer without its images (the
// image tokens have no pixels: 400), or with the bytes inlined into workflow payloads, or a step whose images
// make it larger than the engine's body limit is refused instead of sent in parts.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { trainStepParts } from '../../activities/trainer-backends/train-step-parts.js';
import { trainStepRequest } from '../../activities/trainer-backends/train-step-request.js';
import { createTrainingActivities } from '../../activities/training-activities.js';
import type { ChatMessage } from '../../core/chat-messages.js';
import { type ImageDigest, imageRefsOf, imageStoreKey, type StoredImage } from '../../core/image-parts.js';
import { lossSettingsSchema, optimizerSettingsSchema } from '../../core/loss-settings.js';
import { assembleSample } from '../../core/sample-assembly.js';
import { sampleKey } from '../../core/turn-record.js';
import type { TrainingSample } from '../../core/types.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import {
  type EngineProcess,
  makeTinyVlm,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { FileSampleStore } from '../../store/sample-store.js';

/** A 56x56 RGB PNG of random pixels (incompressible: ~12 KB of base64, so two samples exceed the limit). */
function noisePng(seed: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const byte of buf) c = (crcTable[(c ^ byte) & 0xff] as number) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), 8 + data.length);
    return out;
  };
  const size = 56;
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const noise = randomBytes(size * 3 * size);
  noise[0] = seed;
  const rows = Buffer.concat(
    Array.from({ length: size }, (_, y) =>
      Buffer.concat([Buffer.from([0]), noise.subarray(y * size * 3, (y + 1) * size * 3)]),
    ),
  );
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([
    signature,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const LIMIT_MB = 0.02; // 20 971 bytes: one image sample fits, the two-sample step does not

describe('a vision-language turn trained with its image', () => {
  let dir: string;
  let engine: EngineProcess;
  let store: FileSampleStore;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vision-train-step-'));
    const model = await makeTinyVlm(join(dir, 'vlm'));
    engine = await startReferenceEngine({ model, trainer: true, maxBodyMb: LIMIT_MB });
    store = new FileSampleStore(join(dir, 'store'));
  }, 180_000);

  afterAll(async () => {
    await engine?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Serves one image turn; stores its image and its sample (refs only) as the pipeline does. */
  async function servedImageSample(seed: number, sampleId: string): Promise<TrainingSample> {
    const png = noisePng(seed);
    const image: StoredImage = { mediaType: 'image/png', data: png.toString('base64') };
    const digest = `sha256:${createHash('sha256').update(png).digest('hex')}` as ImageDigest;
    const sent = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What does the screen show?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${image.data}` } },
        ],
      },
    ];
    const response = await fetch(`${engine.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: sent,
        max_tokens: 4,
        logprobs: true,
        return_prompt_token_ids: true,
        return_token_ids: true,
      }),
    });
    const answer = (await response.json()) as { choices: Record<string, unknown>[] };
    expect(response.status, JSON.stringify(answer)).toBe(200);
    // The engine as the project starts it answers as SGLang does: the sampled ids are `response_token_ids`.
    const choice = answer.choices[0] as {
      prompt_token_ids: number[];
      response_token_ids: number[];
      logprobs: { content: { logprob: number }[] };
    };
    // As a recorded turn keeps it: the image as a digest ref; the bytes once in the store.
    const recorded: ChatMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What does the screen show?' },
          { type: 'image_ref', digest, media_type: 'image/png' },
        ],
      },
    ];
    await store.put(imageStoreKey(digest), image);
    const assembled = assembleSample(
      'rl',
      {
        sampleId,
        sessionId: `vision-${sampleId}`,
        turn: 1,
        promptIds: choice.prompt_token_ids,
        responseIds: choice.response_token_ids,
        responseLogProbs: choice.logprobs.content.map((item) => item.logprob),
        policyVersion: 0,
        images: imageRefsOf(recorded),
      },
      { evalScore: 1, hint: null },
    );
    if (!assembled.ok) throw new Error(assembled.exclusion.detail);
    expect(assembled.sample.images).toEqual([{ digest, mediaType: 'image/png' }]);
    await store.put(sampleKey(sampleId), assembled.sample);
    return assembled.sample;
  }

  it('reads the image bytes from the store and trains the exact served ids with them, in parts', async () => {
    const run = Date.now().toString(36);
    const ids = [`vision-a-${run}`, `vision-b-${run}`];
    const samples = [
      await servedImageSample(1, ids[0] as string),
      await servedImageSample(2, ids[1] as string),
    ];
    // The stored sample holds refs, never bytes.
    expect(JSON.stringify(samples)).not.toContain('base64');
    expect(JSON.stringify(samples).length).toBeLessThan(2000);

    // The request body carries the bytes; with both images it exceeds the limit, so it goes in parts.
    const body = trainStepRequest(
      'probe',
      samples.map((s) => ({ ...s, images: [{ mediaType: 'image/png', data: 'x'.repeat(12_000) }] })),
      defaultLossConfig,
      defaultOptimizerConfig,
    );
    expect(body.samples[0]?.images?.[0]?.media_type).toBe('image/png');
    expect(trainStepParts(body, LIMIT_MB * 1024 * 1024)).toHaveLength(2);

    const training = createTrainingActivities({
      store,
      trainer: new ReferenceTrainerBackend(engine.url),
      serving: new ReferenceAdapter(engine.url),
      checkpointDir: join(dir, 'checkpoints'),
    });
    const metrics = await training.trainStep({
      runId: `vision-${run}`,
      stepId: `vision-${run}:v1`,
      sampleIds: ids,
      method: 'rl',
      loss: lossSettingsSchema.parse({}),
      optimizer: optimizerSettingsSchema.parse({ learningRate: 1e-3 }),
      useRolloutLogprobs: false,
      resume: { lastStepId: null, lastCheckpoint: null },
    });
    // The trainer's log-probs of the served ids with the same images are the served ones (same weights).
    expect(metrics.train_rollout_logprob_abs_diff).toBeLessThan(1e-4);
    expect(metrics.samples).toBe(2);
  }, 120_000);

  it('refuses a sample whose image is not in the store, naming it', async () => {
    const run = Date.now().toString(36);
    const sampleId = `vision-missing-${run}`;
    const sample = await servedImageSample(3, sampleId);
    await store.delete(imageStoreKey(sample.images?.[0]?.digest as ImageDigest));
    const training = createTrainingActivities({
      store,
      trainer: new ReferenceTrainerBackend(engine.url),
      serving: new ReferenceAdapter(engine.url),
      checkpointDir: join(dir, 'checkpoints'),
    });
    await expect(
      training.trainStep({
        runId: `vision-missing-${run}`,
        stepId: `vision-missing-${run}:v1`,
        sampleIds: [sampleId],
        method: 'rl',
        loss: lossSettingsSchema.parse({}),
        optimizer: optimizerSettingsSchema.parse({}),
        useRolloutLogprobs: false,
        resume: { lastStepId: null, lastCheckpoint: null },
      }),
    ).rejects.toThrow(/is not in the store/);
  }, 60_000);
});
