// The GPU host through Temporal: `createGpuWorker` starts the engine (the reference engine's image, a tiny
// model) and serves `engineStatus`/`restartEngine` on `gpu-<hostId>`; a workflow asks for both; shutting
// the host down removes the container.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineSupervisor } from '../../activities/engine-container.js';
import { createGpuWorker } from '../../workers/gpu-worker.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';

const docker = new Docker();
const hostId = `test-gpuq-${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'engine-queue-'));
let env: TestWorkflowEnvironment;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

const containersOfThisHost = () =>
  docker.listContainers({ all: true, filters: { label: [`openclaw.gpu-host=${hostId}`] } });

beforeAll(async () => {
  env = await connectTestEnvironment();
  execFileSync('.venv/bin/python', ['-m', 'openclaw_engine', 'make-tiny-model', join(work, 'model')]);
  // The engine container runs as its own user.
  chmodSync(work, 0o755);
  chmodSync(join(work, 'model'), 0o755);
  for (const file of readdirSync(join(work, 'model'))) chmodSync(join(work, 'model', file), 0o644);
}, 60_000);

afterAll(async () => {
  for (const container of await containersOfThisHost())
    await docker.getContainer(container.Id).remove({ force: true });
  rmSync(work, { recursive: true, force: true });
  await env?.teardown();
});

describe('gpu worker', () => {
  it('answers engineStatus and restartEngine on gpu-<hostId>, and removes the engine on shutdown', async () => {
    const supervisor = new EngineSupervisor({
      hostId,
      settings: {
        kind: 'reference',
        image: 'openclaw/engine:dev',
        name: `openclaw-test-gpuq-${process.pid}`,
        modelPath: join(work, 'model'),
        gpus: 0,
        hostPort: await freePort(),
        extraArgs: ['--threads', '1'],
        healthTimeoutMs: 90_000,
      },
      healthPollMs: 200,
    });
    const gpu = await createGpuWorker({
      supervisor,
      hostId,
      connection: env.nativeConnection,
      namespace: env.namespace,
    });
    expect(gpu.taskQueue).toBe(`gpu-${hostId}`);
    const running = gpu.run();
    try {
      const taskQueue = uniqueTaskQueue('gpu-ask');
      const control = await Worker.create({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        taskQueue,
        workflowsPath: fileURLToPath(new URL('./engine-container-queue-workflows.ts', import.meta.url)),
      });
      const { before, after } = await control.runUntil(
        env.client.workflow.execute('askGpuHostWorkflow', {
          taskQueue,
          workflowId: `ask-${taskQueue}`,
          args: [{ hostId }],
        }) as Promise<{
          before: { state: string; containerId: string };
          after: { state: string; containerId: string; requestedRestarts: number };
        }>,
      );
      expect(before.state).toBe('healthy');
      expect(after).toMatchObject({ state: 'healthy', requestedRestarts: 1 });
      expect(after.containerId).not.toBe(before.containerId);
      expect((await containersOfThisHost()).map((c) => c.Id)).toEqual([after.containerId]);
    } finally {
      await gpu.shutdown();
      await running.catch(() => undefined);
    }
    expect(await containersOfThisHost()).toEqual([]);
  });
});
