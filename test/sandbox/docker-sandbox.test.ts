// The Docker sandbox against the real engine: limits, isolation, killing, files, and the lease lifecycle.
// Needs the image openclaw/sandbox-python (`openclaw-rl images build`; .ci/run builds it).

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxFileNotFoundError, SandboxGoneError } from '../../environments/docker-errors.js';
import { DockerSandboxProvider, sandboxContainerName } from '../../environments/docker-sandbox.js';
import type { Sandbox } from '../../environments/sandbox.js';
import { LABELS } from '../../environments/sandbox-lease.js';
import { startSandboxReaper } from '../../environments/sandbox-reaper.js';
import {
  docker,
  ensureImage,
  eventually,
  IMAGE_BUILD_TIMEOUT_MS,
  PYTHON_SPEC,
  rolloutIds,
} from '../support/sandbox-fixture.js';
import { DockerWithFailingStarts, type FailedStart } from './docker-failing-starts.js';

const ids = rolloutIds('sandbox');
// Its own scope: its reaper runs with a clock 35 s ahead, which must not reach containers of other suites
// sharing the Docker engine (another run's 30 s leases would look expired to it).
const provider = new DockerSandboxProvider({
  keeperIntervalSeconds: 1,
  execGraceMs: 3_000,
  scope: `docker-sandbox-test-${process.pid}`,
});
const TEN_MINUTES = 10 * 60_000;

const workers: ChildProcess[] = [];

beforeAll(() => ensureImage(PYTHON_SPEC.image), IMAGE_BUILD_TIMEOUT_MS);

afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL');
  await ids.removeAll();
  expect(await ids.leftovers()).toEqual([]);
});

describe('one sandbox', () => {
  const rolloutId = ids.next('main');
  let sandbox: Sandbox;

  beforeAll(async () => {
    ({ sandbox } = await provider.acquire(PYTHON_SPEC, rolloutId, TEN_MINUTES));
  });

  it('applies the limits, the lockdown and the labels', async () => {
    const info = await docker.getContainer(sandbox.id).inspect();
    expect(info.Name).toBe(`/${sandboxContainerName(rolloutId)}`);
    expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024);
    expect(info.HostConfig.MemorySwap).toBe(256 * 1024 * 1024);
    expect(info.HostConfig.NanoCpus).toBe(500_000_000);
    expect(info.HostConfig.PidsLimit).toBe(64);
    expect(info.HostConfig.NetworkMode).toBe('none');
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    expect(info.HostConfig.CapAdd ?? []).toEqual([]);
    expect(info.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.Config.Labels[LABELS.managed]).toBe('true');
    expect(info.Config.Labels[LABELS.rolloutId]).toBe(rolloutId);
    expect(Number(info.Config.Labels[LABELS.leaseExpiresAt])).toBeGreaterThan(
      Date.now() + TEN_MINUTES - 60_000,
    );

    const whoami = await sandbox.exec(['id', '-un'], { timeoutMs: 10_000 });
    expect(whoami).toMatchObject({ exitCode: 0, stdout: 'agent\n', timedOut: false });
  });

  it('has no network but loopback', async () => {
    const probe = [
      'import socket',
      'print(sorted(name for _, name in socket.if_nameindex()))',
      's = socket.socket(); s.settimeout(3)',
      'try:',
      '    s.connect(("1.1.1.1", 53)); print("connected")',
      'except OSError as error:',
      '    print("blocked", type(error).__name__)',
    ].join('\n');
    const result = await sandbox.exec(['python3', '-c', probe], { timeoutMs: 15_000 });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^\['lo'\]\nblocked /);
  });

  it('separates stdout from stderr, passes stdin, env and workdir, and reports the exit code', async () => {
    const result = await sandbox.exec(['sh', '-c', 'cat; echo "$GREETING from $(pwd)" >&2; exit 3'], {
      timeoutMs: 10_000,
      stdin: 'piped in',
      env: { GREETING: 'hello' },
      workdir: '/tmp',
    });
    expect(result).toEqual({ exitCode: 3, stdout: 'piped in', stderr: 'hello from /tmp\n', timedOut: false });
  });

  it('caps what a command prints', async () => {
    const capped = new DockerSandboxProvider({ maxOutputBytes: 1000 });
    const same = await capped.attach(rolloutId);
    expect(same?.id).toBe(sandbox.id);
    const result = await same?.exec(['python3', '-c', 'print("a" * 200000)'], { timeoutMs: 10_000 });
    expect(result?.exitCode).toBe(0);
    expect(result?.stdout).toBe(`${'a'.repeat(1000)}\n[output truncated: 199001 more bytes]`);
  });

  it('kills a command that runs past its timeout, with its children', async () => {
    const started = Date.now();
    const result = await sandbox.exec(['sh', '-c', 'sleep 300 & python3 -c "while True: pass"'], {
      timeoutMs: 1_500,
    });
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBeNull();
    expect(Date.now() - started).toBeLessThan(10_000);
    const processes = await sandbox.exec(['sh', '-c', 'cat /proc/[0-9]*/comm'], { timeoutMs: 10_000 });
    expect(processes.stdout).not.toMatch(/python3|sleep 300/);
    expect(processes.stdout.split('\n').filter((name) => name === 'sleep').length).toBeLessThanOrEqual(1);
  });

  it('contains a fork bomb: the pids limit holds, the host and the sandbox come back', async () => {
    // Every process keeps forking and retries when the limit says no: the limit stays full until the kill.
    const bomb = 'import os, time\nwhile True:\n    try: os.fork()\n    except OSError: time.sleep(0.01)';
    const running = sandbox.exec(['python3', '-c', bomb], { timeoutMs: 8_000 });
    const seen: number[] = [];
    const filled = await eventually(async () => {
      const stats = await docker.getContainer(sandbox.id).stats({ stream: false });
      seen.push(stats.pids_stats?.current ?? 0);
      return (stats.pids_stats?.current ?? 0) >= 60;
    }, 6_000);
    expect(filled).toBe(true);
    expect(Math.max(...seen)).toBeLessThanOrEqual(64);
    expect(execFileSync('sh', ['-c', 'echo host-ok']).toString()).toBe('host-ok\n');
    const result = await running;
    expect(result.timedOut).toBe(true);
    // The whole process group died with the timeout; the lease keeper (which never forks) is still there.
    const processes = await sandbox.exec(['sh', '-c', 'cat /proc/[0-9]*/comm'], { timeoutMs: 10_000 });
    expect(processes.stdout).not.toMatch(/python3/);
    expect((await docker.getContainer(sandbox.id).inspect()).State.Running).toBe(true);
  });

  it('has the OOM killer end a memory hog without harming the container', async () => {
    const hog = 'chunks = []\nwhile True: chunks.append(b"x" * (16 * 1024 * 1024))';
    const result = await sandbox.exec(['python3', '-c', hog], { timeoutMs: 30_000 });
    expect(result.exitCode).toBe(137);
    expect(result.timedOut).toBe(false);
    const probe = await sandbox.exec(['echo', 'alive'], { timeoutMs: 10_000 });
    expect(probe.stdout).toBe('alive\n');
  });

  it('writes and reads files; the sandbox user can read but not rewrite them', async () => {
    const binary = Buffer.from([0, 1, 2, 250, 255, 10]);
    await sandbox.writeFile('/tmp/fixtures/nested/data.bin', binary);
    await sandbox.writeFile('/tmp/fixtures/note.txt', 'héllo\n');
    expect(await sandbox.readFile('/tmp/fixtures/nested/data.bin')).toEqual(binary);
    expect((await sandbox.readFile('/tmp/fixtures/note.txt')).toString()).toBe('héllo\n');

    const asAgent = await sandbox.exec(
      ['sh', '-c', 'cat /tmp/fixtures/note.txt; echo x > /tmp/fixtures/note.txt'],
      {
        timeoutMs: 10_000,
      },
    );
    expect(asAgent.stdout).toBe('héllo\n');
    expect(asAgent.stderr).toMatch(/Permission denied/);

    await sandbox.exec(['sh', '-c', 'echo made by agent > /home/agent/out.txt'], { timeoutMs: 10_000 });
    expect((await sandbox.readFile('/home/agent/out.txt')).toString()).toBe('made by agent\n');
    await expect(sandbox.readFile('/tmp/missing.txt')).rejects.toBeInstanceOf(SandboxFileNotFoundError);
  });
});

describe('the shell image', () => {
  beforeAll(() => ensureImage('openclaw/sandbox-shell'), IMAGE_BUILD_TIMEOUT_MS);

  it('has bash, git, make and python3, and runs commands as agent', async () => {
    const rolloutId = ids.next('shell');
    const spec = { ...PYTHON_SPEC, image: 'openclaw/sandbox-shell', workdir: '/home/agent' };
    const { sandbox } = await provider.acquire(spec, rolloutId, 60_000);
    const script =
      'set -e; git init -q repo && cd repo && printf "all:\\n\\t@echo built\\n" > Makefile && make && python3 -c "print(1 + 1)" && whoami';
    const result = await sandbox.exec(['bash', '-c', script], { timeoutMs: 20_000 });
    expect(result).toMatchObject({ exitCode: 0, stdout: 'built\n2\nagent\n' });
    await provider.release(rolloutId);
  });
});

describe('leases', () => {
  it('acquire is idempotent per rollout and renews; a changed spec gets a new container', async () => {
    const rolloutId = ids.next('idempotent');
    const first = await provider.acquire(PYTHON_SPEC, rolloutId, 60_000);
    await first.sandbox.writeFile('/tmp/state', 'kept');
    const second = await provider.acquire(PYTHON_SPEC, rolloutId, TEN_MINUTES);
    expect(second.sandbox.id).toBe(first.sandbox.id);
    expect(second.lease.expiresAt).toBeGreaterThan(first.lease.expiresAt);
    expect((await second.sandbox.readFile('/tmp/state')).toString()).toBe('kept');
    expect((await provider.attach(rolloutId))?.id).toBe(first.sandbox.id);

    const changed = await provider.acquire(
      { ...PYTHON_SPEC, limits: { ...PYTHON_SPEC.limits, pids: 32 } },
      rolloutId,
      60_000,
    );
    expect(changed.sandbox.id).not.toBe(first.sandbox.id);
    await provider.release(rolloutId);
  });

  it('concurrent acquires of one rollout end with one container', async () => {
    const rolloutId = ids.next('concurrent');
    const results = await Promise.all([1, 2, 3].map(() => provider.acquire(PYTHON_SPEC, rolloutId, 60_000)));
    const live = await provider.attach(rolloutId);
    expect(live).not.toBeNull();
    expect(results.map((result) => result.sandbox.id)).toEqual([live?.id, live?.id, live?.id]);
    const containers = await docker.listContainers({
      all: true,
      filters: { label: [`${LABELS.rolloutId}=${rolloutId}`] },
    });
    expect(containers.map((container) => container.Id)).toEqual([live?.id]);
    await provider.release(rolloutId);
  });

  it('release removes the container; releasing again succeeds; renew then fails', async () => {
    const rolloutId = ids.next('release');
    const { sandbox } = await provider.acquire(PYTHON_SPEC, rolloutId, 60_000);
    await provider.release(rolloutId);
    await expect(docker.getContainer(sandbox.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await provider.release(rolloutId);
    expect(await provider.attach(rolloutId)).toBeNull();
    await expect(provider.renew(rolloutId, 60_000)).rejects.toBeInstanceOf(SandboxGoneError);
    await expect(sandbox.exec(['true'], { timeoutMs: 5_000 })).rejects.toBeInstanceOf(SandboxGoneError);
  });

  it('reapExpired removes only expired containers of its scope, and honours renewals', async () => {
    const expiring = await provider.acquire(PYTHON_SPEC, ids.next('expiring'), 30_000);
    const renewedId = ids.next('renewed');
    const renewed = await provider.acquire(PYTHON_SPEC, renewedId, 30_000);
    await provider.renew(renewedId, TEN_MINUTES);
    const lasting = await provider.acquire(PYTHON_SPEC, ids.next('lasting'), TEN_MINUTES);

    const reaped = await provider.reapExpired(Date.now() + 35_000);
    expect(reaped).toContain(expiring.sandbox.id);
    expect(reaped).not.toContain(renewed.sandbox.id);
    expect(reaped).not.toContain(lasting.sandbox.id);
    await expect(docker.getContainer(expiring.sandbox.id).inspect()).rejects.toMatchObject({
      statusCode: 404,
    });
    expect((await docker.getContainer(renewed.sandbox.id).inspect()).State.Running).toBe(true);

    // The periodic reaper makes the same sweep (its clock only 35 s ahead, and its scope only this file's).
    const later = await provider.acquire(PYTHON_SPEC, ids.next('expiring-later'), 30_000);
    const swept: string[] = [];
    const reaper = startSandboxReaper(provider, {
      intervalMs: 60_000,
      clock: () => Date.now() + 35_000,
      onReaped: (containerIds) => swept.push(...containerIds),
    });
    await reaper.sweep();
    await reaper.stop();
    expect(swept).toContain(later.sandbox.id);
    expect(swept).not.toContain(renewed.sandbox.id);

    // A container of another scope, its lease as ended as theirs: left alone here, reaped by its own scope.
    const other = new DockerSandboxProvider({ keeperIntervalSeconds: 1, scope: `other-${process.pid}` });
    const theirs = await other.acquire(PYTHON_SPEC, ids.next('other-scope'), 30_000);
    expect(await provider.reapExpired(Date.now() + 35_000)).not.toContain(theirs.sandbox.id);
    expect((await docker.getContainer(theirs.sandbox.id).inspect()).State.Running).toBe(true);
    expect(await other.reapExpired(Date.now() + 35_000)).toEqual([theirs.sandbox.id]);
  });

  it("a SIGKILLed worker's container ends on its own once the lease runs out (no reaper)", async () => {
    const rolloutId = ids.next('orphan');
    // node itself (not npx, whose child would survive the SIGKILL), with tsx as its loader.
    const worker = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/sandbox/hold-sandbox.ts', rolloutId, '6000'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    workers.push(worker);
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: worker.stdout }).once('line', resolve);
      worker.once('exit', (code) => reject(new Error(`hold-sandbox exited with ${code}`)));
    });
    const { containerId } = JSON.parse(line) as { containerId: string };
    worker.kill('SIGKILL');
    expect((await docker.getContainer(containerId).inspect()).State.Running).toBe(true);
    const gone = await eventually(
      () =>
        docker
          .getContainer(containerId)
          .inspect()
          .then(
            () => false,
            (error: { statusCode?: number }) => error.statusCode === 404,
          ),
      30_000,
    );
    expect(gone).toBe(true);
  });
});

describe('a start the Engine fails while mounting', () => {
  const scope = `docker-sandbox-test-${process.pid}`;
  const startWith = async (failures: FailedStart[]) => {
    const client = new DockerWithFailingStarts(failures);
    const flaky = new DockerSandboxProvider({ docker: client, keeperIntervalSeconds: 1, scope });
    const rolloutId = ids.next('flaky-start');
    const acquired = flaky.acquire(PYTHON_SPEC, rolloutId, TEN_MINUTES);
    return { client, rolloutId, acquired };
  };
  const containersOf = async (rolloutId: string) =>
    (
      await docker.listContainers({
        all: true,
        filters: { label: [`${LABELS.rolloutId}=${rolloutId}`] },
      })
    ).map((container) => container.Id);

  it('creates the container again, whether the Engine removed the failed one or kept it', async () => {
    const { client, rolloutId, acquired } = await startWith(['auto-removed', 'left-created']);
    const { sandbox } = await acquired;
    expect(client.created).toHaveLength(3);
    expect(sandbox.id).toBe(client.created[2]);
    expect((await sandbox.exec(['echo', 'started'], { timeoutMs: 10_000 })).stdout).toBe('started\n');
    expect(await containersOf(rolloutId)).toEqual([sandbox.id]);
  });

  it('gives up after three such starts, leaving no container', async () => {
    const { client, rolloutId, acquired } = await startWith(['left-created', 'left-created', 'left-created']);
    await expect(acquired).rejects.toMatchObject({ statusCode: 500, message: /remount/ });
    expect(client.created).toHaveLength(3);
    expect(await containersOf(rolloutId)).toEqual([]);
  });

  it('does not try again after any other failure of a start', async () => {
    const { client, rolloutId, acquired } = await startWith(['other-500']);
    await expect(acquired).rejects.toMatchObject({ statusCode: 500, message: /cgroup busy/ });
    expect(client.created).toHaveLength(1);
    expect(await containersOf(rolloutId)).toEqual([]);
  });
});
