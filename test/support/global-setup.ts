import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TestProject } from 'vitest/node';
import { findTemporalExecutable } from '../../cli/temporal-cli.js';
import { newPayloadKey, newPayloadKeyId } from '../../security/payload-keys.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalNamespace: string;
    /** The run's payload key ring as OPENCLAW_PAYLOAD_KEYS / OPENCLAW_PAYLOAD_KEY_ID; empty: no encryption. */
    payloadKeys: string;
    payloadKeyId: string;
  }
}

/**
 * One real Temporal dev server for the whole test run. Test files connect to it with
 * `TestWorkflowEnvironment.createFromExistingServer`; starting one per file races (see docs/testing.md).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const executable = findTemporalExecutable();
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable,
      namespace: 'default',
      log: { format: 'pretty', level: 'warn' },
    },
  });
  project.provide('temporalAddress', env.address);
  project.provide('temporalNamespace', 'default');
  // Every test encrypts payloads as production does, with a key ring made for this run. Recording
  // histories (RECORD_HISTORIES) runs without it: recorded histories must replay without a key.
  const keyId = newPayloadKeyId();
  const record = Boolean(process.env.RECORD_HISTORIES);
  project.provide('payloadKeys', record ? '' : `${keyId}:${newPayloadKey().toString('base64')}`);
  project.provide('payloadKeyId', record ? '' : keyId);
  return async () => {
    await env.teardown();
  };
}
