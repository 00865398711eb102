// The contract every engine adapter must pass, run against a real engine of its kind (the reference engine,
// the reference engine in strict mode standing in for SGLang, and a real vLLM). What the project relies on:
// health and model info; the prompt an adapter renders is the prompt the engine generates from; exact
// tokens streaming and not (the same ids, one log-prob per id); the teacher prefill scores a sampled response
// as the engine sampled it; publishing a folder changes what is served and names the version, while a
// stream in flight completes; pause holds new requests until resume.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CapturedTurn, TurnCapture } from '../../engines/chat-capture.js';
import { engineChatChunkSchema } from '../../engines/chat-schema.js';
import type { EngineAdapter } from '../../engines/engine-adapter.js';
import { makeTinyModel } from '../../engines/reference-engine-process.js';
import { parseSseEvents } from '../../gateway/engine-stream.js';

export interface ContractSubject {
  adapter: EngineAdapter;
  /** The `model` requests use. */
  model: string;
  /** The folder it serves, and one with other weights of the same architecture and tokenizer. */
  baseWeights: string;
  otherWeights: string;
  close(): Promise<void>;
}

/** Two tiny default models of one architecture and tokenizer (seeds 0 and 1) in a temporary folder. */
export async function tinyWeights(label: string) {
  const dir = await mkdtemp(join(tmpdir(), `${label}-`));
  const [base, other] = await Promise.all([
    makeTinyModel(join(dir, 'base'), 0),
    makeTinyModel(join(dir, 'other'), 1),
  ]);
  return { base, other, remove: () => rm(dir, { recursive: true, force: true }) };
}

const MESSAGES = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Name three colours.' },
];

/** A streamed chat completion read the way the gateway reads it: canonical chunks into a capture. */
export async function streamCapture(
  adapter: EngineAdapter,
  body: Record<string, unknown>,
): Promise<{ turn: CapturedTurn; chunks: Record<string, unknown>[] }> {
  const response = await adapter.chatCompletions(
    adapter.chatBody({ ...body, stream: true }, { capture: true }),
  );
  if (!response.body) throw new Error('no stream');
  const capture = new TurnCapture();
  const chunks: Record<string, unknown>[] = [];
  let done = false;
  for await (const event of parseSseEvents(response.body)) {
    if (event.data === '[DONE]') {
      done = true;
      break;
    }
    const data = JSON.parse(event.data) as Record<string, unknown>;
    // An engine reports a failure inside the stream as an error event: say what it was.
    if ('error' in data) throw new Error(`the engine's stream failed: ${JSON.stringify(data.error)}`);
    const chunk = adapter.canonicalChunk(data);
    chunks.push(chunk);
    capture.addChunk(engineChatChunkSchema.parse(chunk));
  }
  if (!done) throw new Error('the stream ended without [DONE]');
  const captured = capture.finish();
  if (!captured.ok) throw new Error(captured.problem);
  return { turn: captured.turn, chunks };
}

export function describeEngineContract(name: string, start: () => Promise<ContractSubject>): void {
  describe(`engine adapter contract: ${name}`, () => {
    let subject: ContractSubject;
    let adapter: EngineAdapter;

    beforeAll(async () => {
      subject = await start();
      adapter = subject.adapter;
    }, 600_000);

    afterAll(async () => {
      await subject?.close();
    });

    it('answers health and model info, and lists its model', async () => {
      expect(await adapter.health()).toBe(true);
      const info = await adapter.modelInfo();
      expect(typeof info.weightVersion).toBe('string');
      expect(await adapter.weightVersion()).toBe(info.weightVersion);
      const models = (await adapter.listModels()) as { data: { id: string }[] };
      expect(models.data.length).toBeGreaterThan(0);
      expect(await adapter.servingProblems()).toEqual([]);
    });

    it('captures exact tokens; the rendered prompt is the one generated from; the prefill agrees', async () => {
      const rendered = await adapter.renderPrompt({ model: subject.model, messages: MESSAGES });
      const completion = await adapter.complete({
        model: subject.model,
        messages: MESSAGES,
        maxTokens: 12,
        temperature: 1,
        seed: 3,
      });
      expect(completion.promptIds).toEqual(rendered);
      expect(completion.responseIds.length).toBeGreaterThan(0);
      expect(completion.logprobs).toHaveLength(completion.responseIds.length);
      expect(completion.weightVersion).toBe(await adapter.weightVersion());
      expect(['stop', 'length']).toContain(completion.finishReason);
      expect((await adapter.tokenize('[OMITTED MIDDLE]')).length).toBeGreaterThan(0);

      // Sampled at temperature 1 with no top-k/top-p, the sampled log-probs are the model's own: a prefill
      // of prompt ++ response scores each token the same.
      const prefill = await adapter.prefillLogprobs({
        inputIds: [...completion.promptIds, ...completion.responseIds],
        responseLength: completion.responseIds.length,
        topK: 2,
      });
      expect(prefill.logprobs).toHaveLength(completion.responseIds.length);
      prefill.logprobs.forEach((lp, i) => {
        expect(lp).toBeCloseTo(completion.logprobs[i] ?? Number.NaN, 3);
      });
      expect(prefill.topK?.tokenIds[0]).toHaveLength(2);
      const [best, second] = prefill.topK?.logProbs[0] ?? [];
      expect(best).toBeGreaterThanOrEqual(second ?? Number.POSITIVE_INFINITY);
    });

    it('streams the same tokens as it answers whole, with one log-prob per token', async () => {
      const body = { model: subject.model, messages: MESSAGES, max_tokens: 10, temperature: 0 };
      const whole = await adapter.complete({ ...body, maxTokens: 10, temperature: 0 });
      const { turn, chunks } = await streamCapture(adapter, body);
      expect(turn.promptIds).toEqual(whole.promptIds);
      expect(turn.responseIds).toEqual(whole.responseIds);
      expect(turn.responseLogProbs).toHaveLength(turn.responseIds.length);
      turn.responseLogProbs.forEach((lp, i) => {
        expect(lp).toBeCloseTo(whole.logprobs[i] ?? Number.NaN, 3);
      });
      // The canonical shape carries no engine spelling of the ids.
      for (const chunk of chunks) {
        expect(chunk).not.toHaveProperty('sglext');
        expect(chunk).not.toHaveProperty('prompt_token_ids');
      }
    });

    it('publishes a folder as a version, with a stream in flight completing', async () => {
      const ids = await adapter.renderPrompt({ model: subject.model, messages: MESSAGES });
      const score = async () =>
        (await adapter.prefillLogprobs({ inputIds: ids, responseLength: 4, topK: 0 })).logprobs;
      const before = await score();
      // A long stream in flight while the weights change: it completes, with every token.
      const stream = streamCapture(adapter, {
        model: subject.model,
        messages: MESSAGES,
        max_tokens: 48,
        temperature: 1,
        seed: 9,
        ignore_eos: true,
      });
      await adapter.publishWeights({ path: subject.otherWeights, version: '5' });
      const streamed = await stream;
      expect(streamed.turn.responseIds).toHaveLength(48);
      expect(streamed.turn.responseLogProbs).toHaveLength(48);
      expect(await adapter.weightVersion()).toBe('5');
      const after = await score();
      expect(after).not.toEqual(before);
      await adapter.publishWeights({ path: subject.baseWeights, version: '6' });
      expect(await adapter.weightVersion()).toBe('6');
      (await score()).forEach((lp, i) => {
        expect(lp).toBeCloseTo(before[i] ?? Number.NaN, 4);
      });
    });

    it('holds new generations while paused and serves them on resume', async () => {
      await adapter.pause();
      let settled = false;
      const held = adapter
        .complete({ model: subject.model, messages: MESSAGES, maxTokens: 2, temperature: 0 })
        .finally(() => {
          settled = true;
        });
      try {
        // Nothing can finish while paused; a slow machine only makes this wait longer.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect(settled).toBe(false);
      } finally {
        await adapter.resume();
      }
      expect((await held).responseIds.length).toBeGreaterThan(0);
    });
  });
}
