// Benchmarks encrypt payloads as every project process does by default. One key ring per benchmark run, put
// in this process's environment so the worker processes it starts (which inherit it) use the same keys.

import { newPayloadKey, newPayloadKeyId } from '../../security/payload-keys.js';

/** The run's key ring as OPENCLAW_PAYLOAD_KEYS / OPENCLAW_PAYLOAD_KEY_ID (made on the first call). */
export function benchPayloadKeysEnv(): { OPENCLAW_PAYLOAD_KEYS: string; OPENCLAW_PAYLOAD_KEY_ID: string } {
  if (!process.env.OPENCLAW_PAYLOAD_KEYS) {
    const id = newPayloadKeyId();
    process.env.OPENCLAW_PAYLOAD_KEYS = `${id}:${newPayloadKey().toString('base64')}`;
    process.env.OPENCLAW_PAYLOAD_KEY_ID = id;
  }
  return {
    OPENCLAW_PAYLOAD_KEYS: process.env.OPENCLAW_PAYLOAD_KEYS,
    OPENCLAW_PAYLOAD_KEY_ID: process.env.OPENCLAW_PAYLOAD_KEY_ID ?? '',
  };
}
