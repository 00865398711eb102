import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TestProject } from 'vitest/node';
import { findTemporalExecutable } from '../../cli/temporal-cli.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalNamespace: string;
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
  return async () => {
    await env.teardown();
  };
}
