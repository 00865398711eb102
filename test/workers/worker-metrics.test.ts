// A worker process's /metrics: a real Temporal server runs a workflow whose activities the worker times;
// the endpoint then shows the activity histogram by outcome, the training step and publish timings, the
// queue backlog from describeTaskQueue, the container gauge and prom-client's process metrics.
import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config.js';
import { startWorkerTelemetry, type WorkerTelemetry } from '../../workers/worker-telemetry.js';
import { freePort } from '../support/free-port.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { waitFor } from '../support/wait-for.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long the test's training step takes. */
const STEP_MS = 30;

describe('worker metrics', () => {
  let env: TestWorkflowEnvironment;
  let telemetry: WorkerTelemetry;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    const loaded = loadConfig({}, { metrics: { port: await freePort(), host: '127.0.0.1' } });
    if (!loaded.ok) throw new Error(loaded.error);
    telemetry = await startWorkerTelemetry(loaded.config, 'trainer', {
      runningContainers: () => 2,
      log: () => undefined,
    });
  });

  afterAll(async () => {
    await telemetry?.close();
    await env?.teardown();
  });

  it('serves activity timings by outcome, training timings, backlog and containers', async () => {
    const taskQueue = uniqueTaskQueue('metrics');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./metrics-workflows.ts', import.meta.url)),
      activities: {
        trainStep: async () => {
          await sleep(STEP_MS);
          return 'v1';
        },
        publishWeights: async () => 'published',
        refuse: async () => {
          throw new Error('refused');
        },
      },
      ...telemetry.workerOptions,
    });
    telemetry.watchTaskQueues(env.nativeConnection.workflowService, env.namespace ?? 'default', [taskQueue]);
    const result = await worker.runUntil(
      env.client.workflow.execute('stepAndPublishWorkflow', { taskQueue, workflowId: `${taskQueue}-wf` }),
    );
    expect(result).toBe('done');

    const url = telemetry.endpoint?.url;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const scrape = async () => {
      const response = await fetch(url as string);
      expect(response.status).toBe(200);
      return response.text();
    };
    let text = '';
    await waitFor(
      async () => {
        text = await scrape();
        return text.includes(
          `openclaw_worker_task_queue_backlog{task_queue="${taskQueue}",task_type="activity"`,
        );
      },
      30_000,
      'the backlog poll',
    );
    // The sample of `name` whose labels include all of `labels`, as a number (NaN when there is none).
    const value = (name: string, labels: Record<string, string> = {}) => {
      const sample = text.split('\n').find((l) => {
        if (!l.startsWith(`${name}{`) && !l.startsWith(`${name} `)) return false;
        return Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`));
      });
      return sample === undefined ? Number.NaN : Number(sample.slice(sample.lastIndexOf(' ') + 1));
    };
    const activity = (type: string, outcome: string) =>
      value('openclaw_worker_activity_duration_seconds_count', {
        activity_type: type,
        task_queue: taskQueue,
        outcome,
        worker: 'trainer',
      });
    expect(activity('trainStep', 'completed')).toBe(1);
    expect(activity('publishWeights', 'completed')).toBe(1);
    expect(activity('refuse', 'failed')).toBe(1);
    expect(value('openclaw_training_step_seconds_count')).toBe(1);
    // A timer may fire a fraction of a millisecond before the step's own clock says it is due (29.98 ms for 30
    // was seen): the step took at least its sleep, give or take a millisecond.
    expect(value('openclaw_training_step_seconds_sum')).toBeGreaterThanOrEqual((STEP_MS - 1) / 1000);
    expect(value('openclaw_training_publish_seconds_count')).toBe(1);
    for (const type of ['workflow', 'activity'])
      expect(value('openclaw_worker_task_queue_backlog', { task_queue: taskQueue, task_type: type })).toBe(0);
    expect(value('openclaw_worker_running_containers', { process: 'trainer' })).toBe(2);
    expect(value('process_cpu_seconds_total', { worker: 'trainer' })).toBeGreaterThan(0);
    expect((await fetch(url?.replace('/metrics', '/other') as string)).status).toBe(404);
  });
});
