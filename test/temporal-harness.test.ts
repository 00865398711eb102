import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTestEnvironment, uniqueTaskQueue } from './support/temporal.js';
import { createHarnessActivities } from './workflows/harness-activities.js';
import { addWordSignal, harnessWorkflow, wordsQuery } from './workflows/harness-workflows.js';

describe('the shared Temporal dev server', () => {
  let env: TestWorkflowEnvironment;

  beforeAll(async () => {
    env = await connectTestEnvironment();
  });

  afterAll(async () => {
    await env?.teardown();
  });

  it('runs a real workflow with an activity, a signal, a query and a timer', async () => {
    const taskQueue = uniqueTaskQueue('harness');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./workflows/harness-workflows.ts', import.meta.url)),
      activities: createHarnessActivities(),
    });
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(harnessWorkflow, {
        taskQueue,
        workflowId: `harness-${taskQueue}`,
        args: [{ expectedWords: 2 }],
      });
      await handle.signal(addWordSignal, 'hello');
      await handle.signal(addWordSignal, 'temporal');
      const seen = await handle.query(wordsQuery);
      expect(seen.length).toBeGreaterThan(0);
      return handle.result();
    });
    expect(result).toBe('HELLO TEMPORAL!');
  });
});
