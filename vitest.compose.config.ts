import { defineConfig } from 'vitest/config';

// The compose smoke test runs on its own (`npm run test:compose`): it builds images and starts a whole stack.
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/compose/**/*.test.ts'],
    // Each file builds images and starts a stack of its own: one at a time.
    fileParallelism: false,
    setupFiles: ['test/support/quiet-runtime.ts'],
    testTimeout: 10 * 60_000,
    hookTimeout: 60 * 60_000,
  },
});
