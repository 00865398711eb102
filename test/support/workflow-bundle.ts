// The workflow bundle of a test run, built once in global-setup.ts: bundling the workflows takes seconds of CPU,
// and every worker a test created used to do it again. Test workers pass `workflowBundle: testWorkflowBundle()`.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import {
  bundleWorkflowCode,
  DefaultLogger,
  type NativeConnection,
  type Worker,
  type WorkerOptions,
} from '@temporalio/worker';
import { inject } from 'vitest';
import type { OpenClawConfig } from '../../core/config.js';
import type { PayloadEncryptionPlugin } from '../../security/payload-encryption.js';
import {
  type ControlWorkerDependencies,
  createControlWorker,
  workflowsPath,
} from '../../workers/control-worker.js';

/**
 * Bundles the control worker's workflows with what a production worker's bundle holds: the modules its
 * connection's plugin adds (the encryption plugin's failure converter). Writes it into `dir`; returns the path.
 */
export async function buildWorkflowBundle(
  dir: string,
  encryption: PayloadEncryptionPlugin | null,
): Promise<string> {
  const plain: WorkerOptions = { taskQueue: 'bundle', workflowsPath };
  const { dataConverter, interceptors } = encryption ? encryption.configureWorker(plain) : plain;
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    payloadConverterPath: dataConverter?.payloadConverterPath,
    failureConverterPath: dataConverter?.failureConverterPath,
    workflowInterceptorModules: interceptors?.workflowModules,
    logger: new DefaultLogger('WARN'),
  });
  const codePath = join(dir, 'workflow-bundle.js');
  await writeFile(codePath, code);
  return codePath;
}

/** The run's prebuilt bundle of the control worker's workflows, for `WorkerOptions.workflowBundle`. */
export function testWorkflowBundle(): { codePath: string } {
  return { codePath: inject('workflowBundlePath') };
}

/** A control worker on the test run's Temporal connection, with the run's prebuilt workflow bundle. */
export function createTestControlWorker(
  config: OpenClawConfig,
  temporal: { nativeConnection: NativeConnection; client: Client },
  deps: ControlWorkerDependencies = {},
  options: Partial<WorkerOptions> = {},
): Promise<Worker> {
  return createControlWorker(config, temporal.nativeConnection, temporal.client, deps, {
    workflowBundle: testWorkflowBundle(),
    ...options,
  });
}
