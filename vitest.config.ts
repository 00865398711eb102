import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Temporal's native worker and WebAssembly do not survive worker threads (sdk-typescript#876).
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    // The compose smoke test runs alone: vitest.compose.config.ts.
    exclude: ['test/compose/**', '**/node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/quiet-runtime.ts'],
    // Every reference engine a test starts refuses what SGLang refuses (engine `serve --strict`).
    env: { OPENCLAW_ENGINE_STRICT: '1' },
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
