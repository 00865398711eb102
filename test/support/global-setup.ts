import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TestProject } from 'vitest/node';
import { findTemporalExecutable } from '../../cli/temporal-cli.js';
import { PayloadEncryptionPlugin } from '../../security/payload-encryption.js';
import { keyRingFromEntries, newPayloadKey, newPayloadKeyId } from '../../security/payload-keys.js';
import { buildWorkflowBundle } from './workflow-bundle.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalNamespace: string;
    /** The run's payload key ring as OPENCLAW_PAYLOAD_KEYS / OPENCLAW_PAYLOAD_KEY_ID; empty: no encryption. */
    payloadKeys: string;
    payloadKeyId: string;
    /** The control worker's workflows, bundled once for the whole run (workflow-bundle.ts). */
    workflowBundlePath: string;
  }
}

/**
 * One real Temporal dev server for the whole test run. Test files connect to it with
 * `TestWorkflowEnvironment.createFromExistingServer`; starting one per file races (see docs/testing.md).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Every test encrypts payloads as production does, with a key ring made for this run. Recording
  // histories (RECORD_HISTORIES) runs without it: recorded histories must replay without a key.
  const keyId = newPayloadKeyId();
  const record = Boolean(process.env.RECORD_HISTORIES);
  const keys = record ? '' : `${keyId}:${newPayloadKey().toString('base64')}`;
  project.provide('payloadKeys', keys);
  project.provide('payloadKeyId', record ? '' : keyId);

  // The bundle holds what the run's workers would bundle themselves: the encryption plugin's failure
  // converter unless recording. Built while the server starts.
  const bundleDir = await mkdtemp(join(tmpdir(), 'openclaw-workflow-bundle-'));
  const encryption = keys ? new PayloadEncryptionPlugin(keyRingFromEntries([keys], keyId)) : null;
  const bundled = buildWorkflowBundle(bundleDir, encryption);
  bundled.catch(() => undefined); // awaited below, once the server is up
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: findTemporalExecutable(),
      namespace: 'default',
      log: { format: 'pretty', level: 'warn' },
    },
  });
  const teardown = async () => {
    await rm(bundleDir, { recursive: true, force: true });
    await env.teardown();
  };
  try {
    project.provide('workflowBundlePath', await bundled);
  } catch (error) {
    await teardown();
    throw error;
  }
  project.provide('temporalAddress', env.address);
  project.provide('temporalNamespace', 'default');
  return teardown;
}
