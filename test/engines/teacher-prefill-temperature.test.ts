// OPD compares the teacher's log-probs with π_old at the sample's temperature T, so a teacher prefill asked at T
// must answer log_softmax(logits / T) or refuse: a teacher that answers at 1 instead biases every advantage.
// The reference engine scores at T (checked on a real process against its own T = 1 answer: at T the top-K gaps
// are the T = 1 gaps divided by T); started with --return-original-logprob it answers at 1 and its adapter
// refuses; SGLang 0.5.23 and vLLM 0.32 score prompt tokens at 1 only, so their adapters refuse before sending.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { teacherScoresAt } from '../../core/teacher-temperature.js';
import { EngineFeatureError, type PrefillResult } from '../../engines/engine-adapter.js';
import type { EngineCall } from '../../engines/engine-http.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import { type EngineProcess, startReferenceEngine } from '../../engines/reference-engine-process.js';
import { SglangAdapter } from '../../engines/sglang-adapter.js';
import { VllmAdapter } from '../../engines/vllm-adapter.js';
import { tinyWeights } from '../contracts/engine-contract.js';

const T = 0.6;
const K = 5;
const MESSAGES = [{ role: 'user', content: 'Name three colours.' }];

async function prefillRequest(adapter: ReferenceAdapter) {
  const prompt = await adapter.renderPrompt({ messages: MESSAGES });
  const response = await adapter.tokenize('Blue, green and red.');
  return { inputIds: [...prompt, ...response], responseLength: response.length, topK: K };
}

describe('the reference engine as teacher', () => {
  let weights: Awaited<ReturnType<typeof tinyWeights>>;
  let engine: EngineProcess;
  let original: EngineProcess;

  beforeAll(async () => {
    weights = await tinyWeights('teacher-temperature');
    [engine, original] = await Promise.all([
      startReferenceEngine({ model: weights.base }),
      startReferenceEngine({ model: weights.base, originalLogprobs: true }),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([engine?.stop(), original?.stop()]);
    await weights?.remove();
  });

  it('scores a prefill at the temperature asked for: log_softmax(logits / T)', async () => {
    const adapter = new ReferenceAdapter(engine.url);
    const request = await prefillRequest(adapter);
    const atOne: PrefillResult = await adapter.prefillLogprobs({ ...request, temperature: 1 });
    const atT: PrefillResult = await adapter.prefillLogprobs({ ...request, temperature: T });
    expect(atT.logprobs).not.toEqual(atOne.logprobs);
    const one = atOne.topK;
    const scaled = atT.topK;
    if (!one || !scaled) throw new Error('no top-K rows');
    // Temperature keeps the ranking and divides every logit gap by T.
    expect(scaled.tokenIds).toEqual(one.tokenIds);
    one.logProbs.forEach((row, position) => {
      const best = row[0] ?? 0;
      const bestAtT = scaled.logProbs[position]?.[0] ?? 0;
      row.forEach((value, k) => {
        expect((scaled.logProbs[position]?.[k] ?? 0) - bestAtT).toBeCloseTo((value - best) / T, 3);
      });
      expect((atT.logprobs[position] ?? 0) - bestAtT).toBeCloseTo(
        ((atOne.logprobs[position] ?? 0) - best) / T,
        3,
      );
    });
  });

  it('refuses a temperature when its engine reports every log-prob at 1 (--return-original-logprob)', async () => {
    const adapter = new ReferenceAdapter(original.url);
    const request = await prefillRequest(adapter);
    await expect(adapter.prefillLogprobs({ ...request, temperature: T })).rejects.toThrow(EngineFeatureError);
    await expect(adapter.prefillLogprobs({ ...request, temperature: T })).rejects.toThrow(
      /runs with --return-original-logprob, so it scores at temperature 1 only \(asked for 0\.6\)/,
    );
    const atOne = await adapter.prefillLogprobs({ ...request, temperature: 1 });
    expect(atOne.logprobs).toHaveLength(request.responseLength);
  });
});

describe('SGLang and vLLM as teacher', () => {
  it('refuse a prefill at T ≠ 1 before sending anything, and say so in their features', async () => {
    const sent: EngineCall[] = [];
    const request = { inputIds: [1, 2, 3, 4], responseLength: 2, topK: 0, temperature: T };
    const sglang = new SglangAdapter('http://127.0.0.1:1', { onCall: (call) => sent.push(call) });
    const vllm = new VllmAdapter('http://127.0.0.1:1', { onCall: (call) => sent.push(call) });
    await expect(sglang.prefillLogprobs(request)).rejects.toThrow(
      'SGLang scores prompt tokens at temperature 1 only (asked for 0.6); use a reference-engine teacher',
    );
    await expect(vllm.prefillLogprobs(request)).rejects.toThrow(
      'vLLM scores prompt tokens at temperature 1 only (asked for 0.6); use a reference-engine teacher',
    );
    expect(sent).toEqual([]);
    // What the configuration check assumes of each kind is what its adapter says.
    for (const adapter of [sglang, vllm, new ReferenceAdapter('http://127.0.0.1:1')])
      expect(adapter.features.prefillTemperature, adapter.kind).toBe(teacherScoresAt(adapter.kind, T));
  });
});
