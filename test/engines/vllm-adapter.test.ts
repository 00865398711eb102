// The vLLM adapter: the engine adapter contract against a real vLLM (its CPU build, .venv-vllm) serving a
// tiny Qwen3 with a head size vLLM's CPU attention takes, then every request of that run checked with vLLM's
// own request models (test/conformance/vllm_check.py).

import { describe, expect, it } from 'vitest';
import type { EngineCall } from '../../engines/engine-http.js';
import { VllmAdapter } from '../../engines/vllm-adapter.js';
import { startVllm } from '../../engines/vllm-process.js';
import { checkWithEngineCode, failures } from '../conformance/python-check.js';
import { describeEngineContract, tinyWeights } from '../contracts/engine-contract.js';

const sent: EngineCall[] = [];
const TOKEN = `vllm-token-${process.pid}`;
/** What the guarded server answered a caller without the token, per route (seen while it ran). */
const unauthenticated: Record<string, number> = {};

async function statusWithoutToken(url: string, method: 'GET' | 'POST', path: string): Promise<number> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(method === 'POST' && { body: JSON.stringify({ model: 'default', prompt: 'hi' }) }),
  });
  await response.body?.cancel();
  return response.status;
}

describeEngineContract('vllm (real vLLM, CPU build, behind the engine token)', async () => {
  const { base, other, remove } = await tinyWeights('vllm-contract');
  // As `dev --engine vllm` starts it with engine.token set: every call of the contract sends the token.
  const vllm = await startVllm({ model: base, servedModelName: 'default', device: 'cpu', apiKey: TOKEN });
  for (const [method, path] of [
    ['GET', '/v1/models'],
    ['POST', '/v1/chat/completions'],
    ['GET', '/health'],
    ['POST', '/tokenize'],
  ] as const)
    unauthenticated[`${method} ${path}`] = await statusWithoutToken(vllm.url, method, path);
  return {
    adapter: new VllmAdapter(vllm.url, {
      onCall: (call) => sent.push(call),
      headers: { authorization: `Bearer ${TOKEN}` },
    }),
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

  it('the token guards the /v1 routes only: /health and /tokenize stay open (vLLM 0.32.0)', () => {
    expect(unauthenticated).toEqual({
      'GET /v1/models': 401,
      'POST /v1/chat/completions': 401,
      'GET /health': 200,
      'POST /tokenize': 200,
    });
  });
});
