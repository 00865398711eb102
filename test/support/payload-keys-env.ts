import { inject } from 'vitest';

// The run's payload key ring (global-setup.ts) in this test process's environment, so configs loaded from it
// and every `openclaw-rl` process a test starts (they inherit it) encrypt with the same keys as the tests'
// own clients and workers (temporal.ts).
const keys = inject('payloadKeys');
if (keys && !process.env.OPENCLAW_PAYLOAD_KEYS) {
  process.env.OPENCLAW_PAYLOAD_KEYS = keys;
  process.env.OPENCLAW_PAYLOAD_KEY_ID = inject('payloadKeyId');
}
