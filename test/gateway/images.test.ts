// Images in personal-agent turns, through a real gateway, the real reference engine (a tiny text model) and
// Temporal, with a filesystem store.
// Scenario: a user sends the agent a screenshot (as a data URL, or as a link to an image server the operator
// trusts); the turn must be trained with that image (kept once, by digest, never inline in the record), its
// session and the next turn must find each other through the image, and a bad image (a host nobody allowed, too
// large, not an image) must be refused with a 400 that names it, instead of being dropped silently.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/activity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAIJudge } from '../../activities/judge-client.js';
import { createScoringActivities } from '../../activities/scoring-activities.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { createTrainingActivities } from '../../activities/training-activities.js';
import { imageRefsOf, imageStoreKey, type StoredImage } from '../../core/image-parts.js';
import { lossSettingsSchema, optimizerSettingsSchema } from '../../core/loss-settings.js';
import { assembleSample } from '../../core/sample-assembly.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import { sampleKey, teacherKey } from '../../core/turn-record.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import {
  type EngineProcess,
  makeTinyVlm,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { tenantSessions } from '../../gateway/dashboard/session-view.js';
import { digestOf } from '../../gateway/image-intake.js';
import { startFakeJudge } from '../support/fake-judge-server.js';
import { pngDataUrl, tinyPng } from '../support/tiny-png.js';
import { findRecordedTurn, recordedTurns } from '../support/turn-lookup.js';
import { type EngineStack, startEngineStack, startTestGateway, type TestGateway } from './gateway-fixture.js';

/** What the gateway answers: a completion, or an OpenAI error. */
interface Answer {
  choices: { message: { content: string } }[];
  session_id: string;
  error: { message: string; type: string; param: string | null };
}

// 56x56: the tiny VLM's processor sees 4 image tokens.
const RED = tinyPng([255, 0, 0], 56);
const BLUE = tinyPng([0, 0, 255], 56);

describe('images in chat turns', () => {
  let stack: EngineStack;
  let vlm: EngineProcess;
  /** In front of the tiny vision-language model. */
  let gateway: TestGateway;
  /** In front of the tiny text model, which refuses images. */
  let textGateway: TestGateway;
  let imageServer: Server;
  let imageHost: string;
  const local = (id: string) => scopedSessionId(LOCAL_TENANT, id);

  beforeAll(async () => {
    stack = await startEngineStack('gateway-images');
    // The vision-language policy trains too (`--trainer`): one test trains an image turn and serves it again.
    vlm = await startReferenceEngine({ model: await makeTinyVlm(join(stack.dir, 'vlm')), trainer: true });
    // A real HTTP server the operator allows, serving the red PNG, a JPEG-named PNG and a large PNG-ish body.
    imageServer = createServer((req, res) => {
      if (req.url === '/red.png') res.writeHead(200, { 'content-type': 'image/png' }).end(RED);
      else if (req.url === '/lying.jpg') res.writeHead(200, { 'content-type': 'image/jpeg' }).end(RED);
      else if (req.url === '/huge.png')
        res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.concat([RED, Buffer.alloc(4096)]));
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => imageServer.listen(0, '127.0.0.1', resolve));
    imageHost = `127.0.0.1:${(imageServer.address() as AddressInfo).port}`;
    textGateway = await startTestGateway({ engineUrl: stack.engine.url, client: stack.env.client });
    gateway = await startTestGateway({
      engineUrl: vlm.url,
      client: stack.env.client,
      images: { maxBytes: 2048, maxPerRequest: 3, allowedHosts: [imageHost], fetchTimeoutMs: 5000 },
    });
  }, 240_000);

  afterAll(async () => {
    await gateway?.close();
    await textGateway?.close();
    await vlm?.stop();
    await new Promise((resolve) => imageServer?.close(resolve));
    await stack?.close();
  });

  async function chat(body: Record<string, unknown>, headers: Record<string, string> = {}, to = gateway) {
    const response = await fetch(`${to.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ max_tokens: 4, seed: 1, ...body }),
    });
    return { status: response.status, json: (await response.json()) as Answer };
  }

  const withImage = (text: string, url: string | Record<string, unknown>) => ({
    role: 'user',
    content: [
      { type: 'text', text },
      { type: 'image_url', image_url: typeof url === 'string' ? { url } : url },
    ],
  });

  it('records an image turn with a digest ref, stores the bytes once, and pairs the next turn with it', async () => {
    const sessionId = stack.session('image');
    const first = [withImage('What is in this screenshot?', pngDataUrl(RED))];
    const one = await chat({ messages: first }, { 'X-Session-Id': sessionId });
    expect(one.status).toBe(200);
    const reply = one.json.choices[0]?.message.content ?? '';

    // The conversation goes on with the same image in its history: a new turn, continuing the first.
    const second = [
      ...first,
      { role: 'assistant', content: reply },
      withImage('And this one?', pngDataUrl(RED)),
    ];
    const two = await chat({ messages: second }, { 'X-Session-Id': sessionId });
    expect(two.status).toBe(200);

    const turns = await recordedTurns(gateway.store, local(sessionId));
    expect(turns).toHaveLength(2);
    const digest = digestOf(RED);
    expect(turns[0]?.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this screenshot?' },
          { type: 'image_ref', digest, media_type: 'image/png' },
        ],
      },
    ]);
    // No bytes in the record: the data URL's base64 is nowhere in it.
    expect(JSON.stringify(turns)).not.toContain(RED.toString('base64').slice(0, 24));
    expect(turns[1]?.continues?.sampleId).toBe(turns[0]?.sampleId);

    // Stored once, under its digest, as the bytes sent.
    expect(await gateway.store.list('images')).toEqual([imageStoreKey(digest)]);
    const stored = await gateway.store.get<StoredImage>(imageStoreKey(digest));
    expect(stored).toEqual({ mediaType: 'image/png', data: RED.toString('base64') });

    // The dashboard shows the image as a marker with its short digest.
    const sessions = await tenantSessions(gateway.store, LOCAL_TENANT, { sessions: 100, turns: 10 });
    const shown = sessions.find((session) => session.sessionId === sessionId);
    expect(shown?.turns[0]?.prompt).toBe(`What is in this screenshot? [image ${digest.slice(0, 15)}]`);

    // What the session workflow was handed carries refs, never bytes.
    await gateway.delivered();
    const { sessionSignals } = await import('./gateway-fixture.js');
    const signals = await sessionSignals(stack.env.client, local(sessionId));
    expect(signals.length).toBeGreaterThan(0);
    expect(JSON.stringify(signals)).not.toContain(RED.toString('base64').slice(0, 24));

    // The judge of the first turn reads the second's image: as a note, or (a vision judge) as the image.
    const seen: { user: string; images: string[] }[] = [];
    const judge = await startFakeJudge({
      answer: (call) => {
        seen.push(call);
        return { content: '\\boxed{0}' };
      },
    });
    try {
      for (const judgeVision of [false, true]) {
        const scoring = createScoringActivities({
          store: gateway.store,
          judge: new OpenAIJudge({
            baseUrl: judge.url,
            model: 'judge',
            apiKey: '',
            temperature: 0,
            maxTokens: 8,
          }),
          teacher: new ReferenceAdapter(stack.engine.url),
          teacherTopK: 0,
          client: stack.env.client,
          controlTaskQueue: 'unused',
          trainingDefaults: () => ({ runId: 'unused', method: 'rl' }),
          judgeVision,
        });
        await scoring.judgeVote({
          sampleId: turns[0]?.sampleId ?? '',
          nextSampleId: turns[1]?.sampleId ?? '',
          kind: 'eval',
          voteIndex: 0,
        });
      }
    } finally {
      await judge.close();
    }
    const note = `And this one? [image: image/png, ${RED.length} B, ${digest.slice(0, 15)}]`;
    expect(seen[0]?.user).toContain(note);
    expect(seen[0]?.images).toEqual([]);
    expect(seen[1]?.user).toContain(note);
    expect(seen[1]?.images).toEqual([pngDataUrl(RED)]);

    // The vision policy as teacher scores the image turn with its image: the hinted prompt keeps the pads.
    const teacherFor = (url: string) =>
      createScoringActivities({
        store: gateway.store,
        judge: new OpenAIJudge({
          baseUrl: 'http://127.0.0.1:9',
          model: 'judge',
          apiKey: '',
          temperature: 0,
          maxTokens: 8,
        }),
        teacher: new ReferenceAdapter(url),
        teacherTopK: 2,
        client: stack.env.client,
        controlTaskQueue: 'unused',
        trainingDefaults: () => ({ runId: 'unused', method: 'rl' }),
      });
    const imageTurn = turns[0];
    if (!imageTurn) throw new Error('no first turn');
    await teacherFor(vlm.url).computeTeacherLogprobs({
      sampleId: imageTurn.sampleId,
      hint: 'Name the colour.',
    });
    const scored = await gateway.store.get<{ logProbs: number[]; promptIds: number[] }>(
      teacherKey(imageTurn.sampleId),
    );
    const [imagePad] = await new ReferenceAdapter(vlm.url).tokenize('<|image_pad|>');
    const pads = (ids: number[]) => ids.filter((id) => id === imagePad).length;
    expect(scored?.logProbs).toHaveLength(imageTurn.responseIds.length);
    expect(scored?.logProbs.every(Number.isFinite)).toBe(true);
    expect(pads(scored?.promptIds ?? [])).toBe(pads(imageTurn.promptIds));
    expect(pads(imageTurn.promptIds)).toBe(4);

    // Scored without a hint, the teacher's log-probs are the ones the policy sampled with: the image was seen.
    const teacher = new ReferenceAdapter(vlm.url);
    const again = await teacher.prefillLogprobs({
      inputIds: [...imageTurn.promptIds, ...imageTurn.responseIds],
      responseLength: imageTurn.responseIds.length,
      topK: 0,
      temperature: imageTurn.sampling?.temperature ?? 1,
      images: [pngDataUrl(RED)],
    });
    again.logprobs.forEach((lp, i) => {
      expect(lp).toBeCloseTo(imageTurn.responseLogProbs[i] ?? Number.NaN, 3);
    });
    // Other pixels under the same pads score otherwise; no pixels at all is refused.
    const blue = await teacher.prefillLogprobs({
      inputIds: [...imageTurn.promptIds, ...imageTurn.responseIds],
      responseLength: imageTurn.responseIds.length,
      topK: 0,
      images: [pngDataUrl(BLUE)],
    });
    expect(blue.logprobs).not.toEqual(again.logprobs);
    await expect(
      teacher.prefillLogprobs({
        inputIds: [...imageTurn.promptIds, ...imageTurn.responseIds],
        responseLength: imageTurn.responseIds.length,
        topK: 0,
      }),
    ).rejects.toThrow(/image tokens but no images/);

    // A text-only teacher refuses the image prompt once, not retried (the scoring workflow goes on without a
    // teacher, saying why).
    const refused = await teacherFor(stack.engine.url)
      .computeTeacherLogprobs({ sampleId: imageTurn.sampleId, hint: 'Name the colour.' })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect(refused).toMatchObject({ nonRetryable: true, type: 'TeacherRefused' });
    expect((refused as Error).message).toMatch(/does not accept images/);
  });

  it('fetches an image from an allowed host: the same digest and the same session as its data URL', async () => {
    const opening = `Look at this (${Date.now()} ${Math.random()})`;
    const asData = await chat({ messages: [withImage(opening, pngDataUrl(RED))] });
    const asUrl = await chat({ messages: [withImage(opening, `http://${imageHost}/red.png`)] });
    // A bare string, as some clients send it.
    const asBare = await chat({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: opening },
            { type: 'image_url', image_url: `http://${imageHost}/red.png` },
          ],
        },
      ],
    });
    const other = await chat({ messages: [withImage(opening, pngDataUrl(BLUE))] });
    for (const answer of [asData, asUrl, asBare, other]) expect(answer.status).toBe(200);
    expect(asUrl.json.session_id).toBe(asData.json.session_id);
    expect(asBare.json.session_id).toBe(asData.json.session_id);
    // Another image opens another conversation.
    expect(other.json.session_id).not.toBe(asData.json.session_id);
    stack.sessions.add(local(asData.json.session_id));
    stack.sessions.add(local(other.json.session_id));

    const turns = await recordedTurns(gateway.store, local(asData.json.session_id));
    // The same request: one turn (a retry), whichever way the image came.
    const prefixes = new Set(turns.map((turn) => turn.prefixHash));
    expect(prefixes.size).toBe(1);
    const blue = await findRecordedTurn(gateway.store, local(other.json.session_id), 1);
    expect(blue?.prefixHash).not.toBe(turns[0]?.prefixHash);

    // Streamed, the image is recorded the same way.
    const streamed = stack.session('streamed');
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Session-Id': streamed },
      body: JSON.stringify({ messages: [withImage(opening, pngDataUrl(BLUE))], max_tokens: 4, stream: true }),
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('[DONE]');
    const [streamedTurn] = await recordedTurns(gateway.store, local(streamed));
    expect(streamedTurn?.messages[0]?.content).toEqual([
      { type: 'text', text: opening },
      { type: 'image_ref', digest: digestOf(BLUE), media_type: 'image/png' },
    ]);
  });

  it('refuses images it must not take with a 400 naming the field, and the key stays free', async () => {
    const sessionId = stack.session('refused');
    const key = `images-${sessionId}`;
    const refused = async (url: string | Record<string, unknown>) =>
      chat(
        { messages: [{ role: 'system', content: 'Be brief.' }, withImage('Here.', url)] },
        { 'X-Session-Id': sessionId, 'Idempotency-Key': key },
      );
    const field = 'messages[1].content[1].image_url.url';

    const foreign = await refused('https://images.example.com/cat.png');
    expect(foreign.status).toBe(400);
    expect(foreign.json.error).toMatchObject({ param: field, type: 'invalid_request_error' });
    expect(foreign.json.error.message).toContain(
      'image URLs from host images.example.com are not allowed; send a data URL or allow the host',
    );

    const cases: [string | Record<string, unknown>, string][] = [
      [pngDataUrl(Buffer.concat([RED, Buffer.alloc(4096)])), 'over the limit of 2048'],
      [`http://${imageHost}/huge.png`, 'over the limit of 2048'],
      [
        `data:image/svg+xml;base64,${Buffer.from('<svg/>').toString('base64')}`,
        'image type image/svg+xml is not accepted',
      ],
      [`data:image/jpeg;base64,${RED.toString('base64')}`, 'the bytes are image/png, not image/jpeg'],
      [`http://${imageHost}/lying.jpg`, 'the bytes are image/png, not image/jpeg'],
      ['data:image/png;base64,@@@@', "the data URL's base64 is not valid"],
      [`http://${imageHost}/missing.png`, 'answered 404'],
      [{ url: pngDataUrl(RED), detail: 'ultra' }, ''],
    ];
    for (const [url, message] of cases) {
      const answer = await refused(url);
      expect(answer.status, message).toBe(400);
      expect(answer.json.error.param).toBe(
        typeof url === 'string' ? field : 'messages[1].content[1].image_url.detail',
      );
      expect(answer.json.error.message).toContain(message);
    }
    const tooMany = await chat({
      messages: [
        {
          role: 'user',
          content: Array.from({ length: 4 }, () => ({
            type: 'image_url',
            image_url: { url: pngDataUrl(RED) },
          })),
        },
      ],
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.error.param).toBe('messages[0].content[3].image_url.url');

    expect(await recordedTurns(gateway.store, local(sessionId))).toEqual([]);
    // The key was never held: the same key with a good image is answered afresh.
    const good = await refused(pngDataUrl(BLUE));
    expect(good.status).toBe(200);
  });

  it('relays the 400 of a model that cannot take images, records nothing, and frees the key', async () => {
    const sessionId = stack.session('text-model');
    const key = `text-model-${sessionId}`;
    const headers = { 'X-Session-Id': sessionId, 'Idempotency-Key': key };
    const refused = await chat(
      { messages: [withImage('Read this.', pngDataUrl(RED))] },
      headers,
      textGateway,
    );
    expect(refused.status).toBe(400);
    expect(refused.json.error.type).toBe('invalid_request_error');
    expect(refused.json.error.message).toContain('does not accept images');
    expect(await recordedTurns(textGateway.store, local(sessionId))).toEqual([]);
    expect(await textGateway.store.list('images')).toEqual([]);
    // The key is free: the client's text-only retry under it is answered afresh.
    const retried = await chat({ messages: [{ role: 'user', content: 'Read this.' }] }, headers, textGateway);
    expect(retried.status).toBe(200);
  });

  // A screenshot turn of a vision-language policy, end to end: the gateway's capture holds exactly the ids the
  // engine consumed (the image's pad tokens included), the reference trainer trains it with the stored image
  // (its log-probs at version 0 are the served ones), and version 1 serves the same image request.
  it("captures an image turn with the engine's ids, trains it with its image, and serves it at version 1", async () => {
    const sessionId = stack.session('vision-train');
    const png = tinyPng([10, 200, 30], 56);
    const messages = [withImage('Which colour fills this screen?', pngDataUrl(png))];
    const answer = await chat({ messages, max_tokens: 5 }, { 'X-Session-Id': sessionId });
    expect(answer.status).toBe(200);
    const [turn] = await recordedTurns(gateway.store, local(sessionId));
    if (!turn) throw new Error('no recorded turn');
    const tokenized = await fetch(`${vlm.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages }),
    });
    const engineIds = ((await tokenized.json()) as { tokens: number[] }).tokens;
    expect(turn.promptIds).toEqual(engineIds);

    const assembled = assembleSample(
      'rl',
      {
        sampleId: turn.sampleId,
        sessionId: turn.sessionId,
        turn: turn.turn,
        promptIds: turn.promptIds,
        responseIds: turn.responseIds,
        responseLogProbs: turn.responseLogProbs,
        policyVersion: turn.policyVersion,
        images: imageRefsOf(turn.messages),
      },
      { evalScore: 1, hint: null },
    );
    if (!assembled.ok) throw new Error(assembled.exclusion.detail);
    expect(assembled.sample.images).toEqual([{ digest: digestOf(png), mediaType: 'image/png' }]);
    await gateway.store.put(sampleKey(turn.sampleId), assembled.sample);
    const training = createTrainingActivities({
      store: gateway.store,
      trainer: new ReferenceTrainerBackend(vlm.url),
      serving: new ReferenceAdapter(vlm.url),
      checkpointDir: join(stack.dir, 'checkpoints'),
    });
    const runId = `vision-${sessionId}`.slice(0, 60);
    const metrics = await training.trainStep({
      runId,
      stepId: `${runId}:v1`,
      sampleIds: [turn.sampleId],
      method: 'rl',
      loss: lossSettingsSchema.parse({}),
      optimizer: optimizerSettingsSchema.parse({ learningRate: 1e-2 }),
      useRolloutLogprobs: false,
      resume: { lastStepId: null, lastCheckpoint: null },
    });
    expect(metrics.train_rollout_logprob_abs_diff).toBeLessThan(1e-4);
    await training.publishWeights({ runId, stepId: `${runId}:v1`, version: 1 });

    const again = await chat({ messages, max_tokens: 5 }, { 'X-Session-Id': stack.session('vision-again') });
    expect(again.status).toBe(200);
    const served = await fetch(`${vlm.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages, max_tokens: 2 }),
    });
    expect(((await served.json()) as { metadata: { weight_version: string } }).metadata.weight_version).toBe(
      '1',
    );
  }, 120_000);

  // A Codex-style agent sends a screenshot as an `input_image` through the Responses API, a Claude-style agent as
  // an `image` block through the Messages API, each from its official client: the image must be kept and trained
  // as it is from chat (a digest ref, the bytes stored, the engine's own ids), never dropped on the way.
  it('keeps images sent through the Responses and Messages APIs as chat keeps them', async () => {
    const tokenize = async (messages: unknown[]) => {
      const response = await fetch(`${vlm.url}/tokenize`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages, add_generation_prompt: true }),
      });
      return ((await response.json()) as { tokens: number[] }).tokens;
    };
    const text = 'Which colour is this?';
    const chatEquivalent = [withImage(text, pngDataUrl(BLUE))];

    const viaResponses = stack.session('image-responses');
    await gateway.openai().responses.create(
      {
        model: 'tiny-vlm',
        max_output_tokens: 4,
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text },
              { type: 'input_image', image_url: pngDataUrl(BLUE), detail: 'auto' },
            ],
          },
        ],
      },
      { headers: { 'X-Session-Id': viaResponses } },
    );
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'unused', maxRetries: 0 });
    const viaMessages = stack.session('image-messages');
    await anthropic.messages.create(
      {
        model: 'tiny-vlm',
        max_tokens: 4,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text },
              {
                type: 'image',
                source: { type: 'base64', media_type: 'image/png', data: BLUE.toString('base64') },
              },
            ],
          },
        ],
      },
      { headers: { 'X-Session-Id': viaMessages } },
    );

    const expectedIds = await tokenize(chatEquivalent);
    for (const sessionId of [viaResponses, viaMessages]) {
      const [turn] = await recordedTurns(gateway.store, local(sessionId));
      if (!turn) throw new Error(`no recorded turn for ${sessionId}`);
      expect(turn.promptIds).toEqual(expectedIds);
      expect(imageRefsOf(turn.messages)).toEqual([
        { type: 'image_ref', digest: digestOf(BLUE), media_type: 'image/png' },
      ]);
      const stored = await gateway.store.get<StoredImage>(imageStoreKey(digestOf(BLUE)));
      expect(stored?.data).toBe(BLUE.toString('base64'));
    }
  });
});
