// The SGLang adapter: the engine adapter contract against the reference engine in strict mode (it refuses
// what SGLang 0.5.23 refuses and answers in its spelling), then every request that run sent checked against
// SGLang 0.5.23's own request models, serving code and stream restrictions (test/conformance/sglang_check.py).

import { describe, expect, it } from 'vitest';
import type { EngineCall } from '../../engines/engine-http.js';
import { startReferenceEngine } from '../../engines/reference-engine-process.js';
import { SglangAdapter } from '../../engines/sglang-adapter.js';
import { checkWithEngineCode, failures } from '../conformance/python-check.js';
import { describeEngineContract, tinyWeights } from '../contracts/engine-contract.js';

const sent: EngineCall[] = [];

describeEngineContract('sglang (the reference engine in strict mode standing in)', async () => {
  const { base, other, remove } = await tinyWeights('sglang-contract');
  const engine = await startReferenceEngine({ model: base });
  return {
    adapter: new SglangAdapter(engine.url, { onCall: (call) => sent.push(call) }),
    model: 'tiny',
    baseWeights: base,
    otherWeights: other,
    async close() {
      await engine.stop();
      await remove();
    },
  };
});

describe("what the SGLang adapter sends, checked with SGLang 0.5.23's own code", () => {
  it('every request body of the contract run is one SGLang accepts, streams included', async () => {
    const paths = new Set(sent.map((call) => call.path));
    for (const path of ['/v1/chat/completions', '/v1/tokenize', '/generate', '/update_weights_from_disk'])
      expect(paths, path).toContain(path);
    expect(
      sent.some((c) => c.path === '/v1/chat/completions' && (c.body as { stream?: boolean }).stream),
    ).toBe(true);
    const adapter = new SglangAdapter('http://127.0.0.1:1', { onCall: (call) => sent.push(call) });
    // The calls the contract cannot make on the reference engine, and a captured chat with tools.
    await Promise.allSettled([
      adapter.loadLoraAdapter({ name: 'policy-v3', path: '/checkpoints/v3' }),
      adapter.abort('rollout-1:0'),
      adapter.complete({
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
        maxTokens: 8,
        temperature: 0.7,
        topP: 0.9,
        seed: 1,
        inputIds: [1, 2, 3],
        requestId: 'rollout-1:0',
      }),
    ]);
    const result = await checkWithEngineCode('sglang', { calls: sent });
    expect(failures(result)).toEqual([]);
    expect(result.calls.length).toBe(sent.length);
  }, 180_000);

  it('the checker has teeth: SGLang refuses the exact-token flags on streams and unknown fields', async () => {
    const chat = { messages: [{ role: 'user', content: 'x' }], stream: true };
    const result = await checkWithEngineCode('sglang', {
      calls: [
        { method: 'POST', path: '/v1/chat/completions', body: { ...chat, return_token_ids: true } },
        { method: 'POST', path: '/v1/chat/completions', body: { ...chat, return_prompt_token_ids: true } },
        { method: 'POST', path: '/v1/chat/completions', body: { ...chat, return_meta_info: true } },
        { method: 'POST', path: '/v1/chat/completions', body: { ...chat, return_output_id_in_sglext: true } },
        { method: 'POST', path: '/generate', body: { input_ids: [1], sampling_params: { temperature: -1 } } },
      ],
    });
    expect(result.calls.map((c) => c.ok)).toEqual([false, false, false, false, false]);
    expect(result.calls[0]?.error).toContain('return_token_ids is not supported with streaming');
  }, 180_000);
});
