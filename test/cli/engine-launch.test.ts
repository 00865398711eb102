// What `dev` and `engine` refuse before they start anything: a vLLM listening beyond loopback without the
// engine token (its /v1 routes would be open to the network).
import { describe, expect, it } from 'vitest';
import { launchEngine } from '../../cli/engine-launch.js';
import { loadConfig, type OpenClawConfigInput } from '../../core/config.js';

function config(engine: OpenClawConfigInput['engine']) {
  const loaded = loadConfig({}, { dataDir: '/nonexistent/openclaw-data', engine });
  if (!loaded.ok) throw new Error(loaded.error);
  return loaded.config;
}

describe('launchEngine', () => {
  it('refuses to start vLLM beyond loopback without a token', async () => {
    await expect(launchEngine(config({ kind: 'vllm', url: 'http://0.0.0.0:30000' }))).rejects.toThrow(
      /refusing to start vLLM on 0\.0\.0\.0 without a token: set engine\.token/,
    );
    await expect(launchEngine(config({ kind: 'vllm', url: 'http://192.168.1.5:30000' }))).rejects.toThrow(
      /refusing to start vLLM on 192\.168\.1\.5/,
    );
  });
});
