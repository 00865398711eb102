import { defineConfig } from 'vitest/config';
import { LaneSequencer } from './test/support/lane-sequencer.js';

export default defineConfig({
  test: {
    // Temporal's native worker and WebAssembly do not survive worker threads (sdk-typescript#876).
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    // The compose smoke test runs alone: vitest.compose.config.ts.
    exclude: ['test/compose/**', '**/node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/quiet-runtime.ts', 'test/support/payload-keys-env.ts'],
    // Every reference engine a test starts refuses what SGLang refuses (engine `serve --strict`).
    env: { OPENCLAW_ENGINE_STRICT: '1' },
    // `npm run test:ts` runs two lanes at once (`--shard=1/2`, `--shard=2/2`: scripts/test-lanes.sh).
    sequence: { sequencer: LaneSequencer },
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
