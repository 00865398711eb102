// The vLLM adapter: the engine adapter contract against a real vLLM (its CPU build, .venv-vllm) serving a
// tiny Qwen3 with a head size vLLM's CPU attention takes, then every request of that run checked with vLLM's
// own request models (test/conformance/vllm_check.py).

import { describe, expect, it } from 'vitest';
import type { EngineCall } from '../../engines/engine-http.js';
import { VllmAdapter } from '../../engines/vllm-adapter.js';
import { startVllm } from '../../workers/vllm-process.js';
import { checkWithEngineCode, failures } from '../conformance/python-check.js';
import { describeEngineContract, tinyWeights } from './engine-contract.js';

const sent: EngineCall[] = [];

describeEngineContract('vllm (real vLLM, CPU build)', async () => {
  const { base, other, remove } = await tinyWeights('vllm-contract', 64);
  const vllm = await startVllm({ model: base, servedModelName: 'default', device: 'cpu' });
  return {
    adapter: new VllmAdapter(vllm.url, { onCall: (call) => sent.push(call) }),
    model: 'default',
    baseWeights: base,
    otherWeights: other,
    async close() {
      await vllm.stop();
      await remove();
    },
  };
});

describe("what the vLLM adapter sends, checked with vLLM's own code", () => {
  it('every request body of the contract run is one of the route models vLLM has', async () => {
    expect(sent.length).toBeGreaterThan(10);
    const result = await checkWithEngineCode('vllm', { calls: sent });
    expect(failures(result)).toEqual([]);
  }, 180_000);
});
