import { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';

/** Connects a test file to the run's shared Temporal dev server (started in global-setup.ts). */
export async function connectTestEnvironment(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createFromExistingServer({
    address: inject('temporalAddress'),
    namespace: inject('temporalNamespace'),
  });
}

/** A task queue name no other test uses, so workers of parallel files never steal each other's tasks. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
