// Why a vLLM teacher is refused at T ≠ 1: an opd run sampling at 0.6 would ask vLLM for the teacher's prompt
// log-probs at 0.6 and get them at 1, as the real vLLM 0.32 (CPU build, started as the project starts it, with
// `--logprobs-mode processed_logprobs`) shows here: its prompt log-probs are the same at any temperature. The
// adapter therefore refuses 0.6 and scores at 1.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineFeatureError } from '../../engines/engine-adapter.js';
import { VllmAdapter } from '../../engines/vllm-adapter.js';
import { startVllm, type VllmProcess } from '../../engines/vllm-process.js';
import { tinyWeights } from '../contracts/engine-contract.js';

type PromptLogprobs = ({ [id: string]: { logprob: number } } | null)[];

describe('vLLM as teacher at T ≠ 1', () => {
  let weights: Awaited<ReturnType<typeof tinyWeights>>;
  let vllm: VllmProcess;

  beforeAll(async () => {
    weights = await tinyWeights('vllm-prompt-temperature');
    vllm = await startVllm({ model: weights.base, servedModelName: 'default', device: 'cpu' });
  }, 600_000);

  afterAll(async () => {
    await vllm?.stop();
    await weights?.remove();
  });

  it('scores prompt tokens at temperature 1 whatever the request says, so the adapter refuses 0.6', async () => {
    const adapter = new VllmAdapter(vllm.url);
    const prompt = await adapter.renderPrompt({
      messages: [{ role: 'user', content: 'Name three colours.' }],
    });
    const response = await adapter.tokenize('Blue, green and red.');
    const inputIds = [...prompt, ...response];
    const promptLogprobs = async (temperature: number) => {
      const answer = await fetch(`${vllm.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'default',
          prompt: inputIds,
          max_tokens: 1,
          temperature,
          prompt_logprobs: 0,
        }),
      });
      const body = (await answer.json()) as { choices: { prompt_logprobs: PromptLogprobs }[] };
      return body.choices[0]?.prompt_logprobs.map((row, i) => row?.[String(inputIds[i])]?.logprob ?? null);
    };
    const atOne = await promptLogprobs(1);
    expect(atOne?.slice(1).every((lp) => typeof lp === 'number' && lp < 0)).toBe(true);
    expect(await promptLogprobs(0.6)).toEqual(atOne);

    const request = { inputIds, responseLength: response.length, topK: 0 };
    await expect(adapter.prefillLogprobs({ ...request, temperature: 0.6 })).rejects.toThrow(
      EngineFeatureError,
    );
    const scored = await adapter.prefillLogprobs({ ...request, temperature: 1 });
    scored.logprobs.forEach((lp, i) => {
      expect(lp).toBeCloseTo(atOne?.[prompt.length + i] ?? Number.NaN, 4);
    });
  }, 120_000);
});
