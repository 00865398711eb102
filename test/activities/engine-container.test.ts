// The GPU host's engine supervisor against the real Docker engine, with the reference engine's image
// standing in for SGLang's (the same HTTP contract) and a tiny model mounted: start, health, a chat
// completion, a weight update while a chat request streams, a crash and its restart, a requested restart,
// and stop leaving no container behind.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineSupervisor } from '../../activities/engine-container.js';
import { createEngineContainerActivities } from '../../activities/engine-container-activities.js';
import { engineCalls } from '../support/engine-calls.js';

const IMAGE = 'openclaw/engine:dev';
const docker = new Docker();
const hostId = `test-gpu-${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'engine-container-'));
const modelDir = join(work, 'model');
const checkpointDir = join(work, 'checkpoints');
const logLines: string[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

/** The engine container runs as its own user: everything mounted must be readable by anyone. */
function makeReadable(dir: string): void {
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) makeReadable(path);
    else chmodSync(path, 0o644);
  }
}

async function containersOfThisHost(): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`openclaw.gpu-host=${hostId}`] } });
}

async function chat(url: string, content: string): Promise<string> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: 8, temperature: 0 }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { choices: { finish_reason: string }[] };
  return body.choices[0]?.finish_reason ?? '';
}

let supervisor: EngineSupervisor;

beforeAll(async () => {
  const present = await docker
    .getImage(IMAGE)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (!present) throw new Error(`${IMAGE} is missing: docker compose build engine`);
  execFileSync('.venv/bin/python', ['-m', 'openclaw_engine', 'make-tiny-model', modelDir]);
  // A "published checkpoint": the same weights as a new version, where publishWeights would write it.
  cpSync(modelDir, join(checkpointDir, 'run', 'v1'), { recursive: true });
  makeReadable(work);
  supervisor = new EngineSupervisor({
    hostId,
    settings: {
      kind: 'reference',
      image: IMAGE,
      name: `openclaw-test-engine-${process.pid}`,
      modelPath: modelDir,
      checkpointDir,
      gpus: 0,
      hostPort: await freePort(),
      extraArgs: ['--threads', '1'],
      healthTimeoutMs: 90_000,
      restartDelayMs: 200,
      livenessIntervalMs: 1_000,
      livenessFailures: 3,
      healthRequestTimeoutMs: 2_000,
    },
    healthPollMs: 200,
    logger: {
      info: (message) => logLines.push(message),
      warn: (message) => logLines.push(message),
      error: (message) => logLines.push(message),
    },
  });
  // Making the tiny model starts Python and imports torch: on a loaded machine that alone took over a minute.
}, 180_000);

afterAll(async () => {
  await supervisor?.stop().catch(() => undefined);
  for (const container of await containersOfThisHost())
    await docker.getContainer(container.Id).remove({ force: true });
  rmSync(work, { recursive: true, force: true });
});

describe('engine supervisor (reference engine image)', () => {
  it('starts the container, waits until healthy, and serves a chat completion', async () => {
    const status = await supervisor.start();
    expect(status.state).toBe('healthy');
    console.log(`engine container start-to-healthy: ${status.lastStartToHealthyMs} ms`);
    const info = await docker.getContainer(status.containerId ?? '').inspect();
    expect(info.Config.Labels['openclaw.gpu-host']).toBe(hostId);
    expect(info.Mounts.find((m) => m.Destination === '/models/policy')?.RW).toBe(false);
    expect(info.HostConfig.DeviceRequests ?? []).toEqual([]);
    expect(await chat(supervisor.url, 'hello')).toMatch(/stop|length/);
    // The engine's own output reached the logger.
    expect(logLines.some((line) => /uvicorn|serving|Uvicorn|INFO/i.test(line))).toBe(true);
  });

  it('completes a chat request that is streaming while the weights are updated', async () => {
    const response = await fetch(`${supervisor.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [{ role: 'user', content: 'count' }],
        max_tokens: 1000,
        ignore_eos: true,
        temperature: 0,
        stream: true,
      }),
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value); // the first event: the request is in flight
    // publishWeights' call, while the request streams.
    const update = await engineCalls(supervisor.url).updateWeightsFromDisk(
      join(checkpointDir, 'run', 'v1'),
      '1',
    );
    expect(update.success).toBe(true);
    const beforeUpdateReturned = text.length;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const events = text
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
      .map(
        (line) => JSON.parse(line.slice(6)) as { error?: unknown; choices?: { finish_reason?: string }[] },
      );
    expect(events.filter((event) => event.error !== undefined)).toEqual([]);
    expect(events.some((event) => event.choices?.[0]?.finish_reason === 'length')).toBe(true);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    // The request was still streaming when the update returned: tokens kept coming after it.
    expect(text.slice(beforeUpdateReturned).split('data: ').length).toBeGreaterThan(10);
    expect((await engineCalls(supervisor.url).modelInfo()).weight_version).toBe('1');
  });

  it('restarts the engine when its container is killed, and it serves again', async () => {
    const before = supervisor.status();
    await docker.getContainer(before.containerId ?? '').kill();
    await expect.poll(() => supervisor.status().crashRestarts, { timeout: 10_000 }).toBe(1);
    await supervisor.untilHealthy();
    const after = supervisor.status();
    expect(after.state).toBe('healthy');
    expect(after.containerId).not.toBe(before.containerId);
    expect(after.lastExit?.code).toBe(137);
    expect(after.crashRestarts).toBe(1);
    expect(await chat(supervisor.url, 'again')).toMatch(/stop|length/);
    expect((await containersOfThisHost()).length).toBe(1);
  });

  it('restarts an engine that stops answering (its container paused) like a crashed one', async () => {
    const before = supervisor.status();
    await docker.getContainer(before.containerId ?? '').pause();
    await expect.poll(() => supervisor.status().crashRestarts, { timeout: 20_000, interval: 200 }).toBe(2);
    await supervisor.untilHealthy();
    const after = supervisor.status();
    expect(after.containerId).not.toBe(before.containerId);
    expect(after.lastError).toBeNull();
    expect(await chat(supervisor.url, 'awake')).toMatch(/stop|length/);
    expect((await containersOfThisHost()).length).toBe(1);
  });

  it('restarts on request (restartEngine) and reports its status (engineStatus)', async () => {
    const activities = createEngineContainerActivities(supervisor);
    const before = await activities.engineStatus();
    const after = await activities.restartEngine();
    expect(after.state).toBe('healthy');
    expect(after.requestedRestarts).toBe(1);
    expect(after.crashRestarts).toBe(before.crashRestarts);
    expect(after.containerId).not.toBe(before.containerId);
    expect((await containersOfThisHost()).length).toBe(1);
  });

  it('fails a start that Docker refuses (GPUs without an NVIDIA runtime) clearly, leaving no container', async () => {
    const gpuLess = new EngineSupervisor({
      hostId,
      settings: {
        kind: 'reference',
        image: IMAGE,
        name: `openclaw-test-engine-gpu-${process.pid}`,
        modelPath: modelDir,
        gpus: 1,
        hostPort: await freePort(),
      },
    });
    await expect(gpuLess.start()).rejects.toThrow(
      /docker start openclaw-test-engine-gpu-.*(nvidia|gpu|device)/i,
    );
    expect(gpuLess.status()).toMatchObject({ state: 'stopped', containerId: null });
    expect((await containersOfThisHost()).length).toBe(1); // the supervised engine only
  });

  it('stops the engine and leaves no container', async () => {
    await supervisor.stop();
    expect(supervisor.status().state).toBe('stopped');
    expect(await containersOfThisHost()).toEqual([]);
    expect(await engineCalls(supervisor.url).health()).toBe(false);
  });
});
