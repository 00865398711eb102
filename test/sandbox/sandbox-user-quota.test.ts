// Who runs a sandbox's commands and how much it may write, on the real Docker engine: an image that runs as
// root runs the policy as uid 1000, to whom the working directory is handed over (`runAs: 'non-root'`), or as
// root without capabilities (`image`); a container that writes past its disk quota is removed and its rollout
// gets no other (the watcher, where the storage driver has no quota of its own); an image that is not here
// and cannot be pulled is refused with how to provide it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxDiskQuotaError, SandboxImageMissingError } from '../../environments/docker-errors.js';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import type { SandboxSpec } from '../../environments/sandbox.js';
import { ensureImage, eventually, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';

const ids = rolloutIds('user-quota');
const ROOT_IMAGE: SandboxSpec = {
  image: 'openclaw/tbench-base',
  limits: { memoryBytes: 256 * 1024 * 1024, cpus: 0.5, pids: 64 },
  network: false,
  workdir: '/app',
};
const sh = (command: string) => ['sh', '-c', command];

beforeAll(async () => {
  await ensureImage('openclaw/tbench-base');
}, IMAGE_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await ids.removeAll();
  expect(await ids.leftovers()).toEqual([]);
});

describe('sandbox users', () => {
  const provider = new DockerSandboxProvider();

  it('non-root: uid 1000 owns the working directory and cannot touch root’s files', async () => {
    const { sandbox } = await provider.acquire(
      { ...ROOT_IMAGE, runAs: 'non-root' },
      ids.next('nonroot'),
      60_000,
    );
    const result = await sandbox.exec(
      sh('id -u; pwd; touch /app/mine && echo wrote; touch /etc/x || echo refused'),
      {
        timeoutMs: 10_000,
      },
    );
    expect(result.stdout.split('\n').slice(0, 4)).toEqual(['1000', '/app', 'wrote', 'refused']);
    expect(
      (await sandbox.exec(sh('echo $HOME; test -w $HOME && echo writable'), { timeoutMs: 10_000 })).stdout,
    ).toBe('/home/sandbox\nwritable\n');
  });

  it('image: the image’s own user (root here), without capabilities', async () => {
    const { sandbox } = await provider.acquire({ ...ROOT_IMAGE, runAs: 'image' }, ids.next('image'), 60_000);
    const result = await sandbox.exec(sh('id -u; grep CapEff /proc/self/status'), { timeoutMs: 10_000 });
    expect(result.stdout).toMatch(/^0\nCapEff:\s+0+\n$/);
  });
});

describe('disk quota', () => {
  const quota = 20 * 1024 * 1024;
  const provider = new DockerSandboxProvider({ diskQuotaBytes: quota, diskCheckIntervalMs: 300 });
  afterAll(() => provider.close());

  it('removes a container that writes past its quota, and its rollout gets no other', async () => {
    const rolloutId = ids.next('quota');
    const { sandbox } = await provider.acquire({ ...ROOT_IMAGE, runAs: 'non-root' }, rolloutId, 60_000);
    const small = await sandbox.exec(sh('head -c 5000000 /dev/zero > /app/small && echo ok'), {
      timeoutMs: 20_000,
    });
    expect(small.stdout).toBe('ok\n');
    await sandbox
      .exec(sh('head -c 40000000 /dev/zero > /app/big; sleep 30'), { timeoutMs: 40_000 })
      .catch(() => null);
    const mode = provider.diskQuotaMode();
    expect(['storage-driver', 'watcher']).toContain(mode);
    if (mode === 'watcher') {
      expect(await eventually(async () => (await provider.attach(rolloutId)) === null, 20_000)).toBe(true);
      await expect(provider.acquire(ROOT_IMAGE, rolloutId, 60_000)).rejects.toBeInstanceOf(
        SandboxDiskQuotaError,
      );
    }
  }, 90_000);
});

describe('missing images', () => {
  it('an image that is not here and cannot be pulled is refused, saying how to provide it', async () => {
    const provider = new DockerSandboxProvider();
    const image = 'docker.io/swebench/sweb.eval.x86_64.openclaw_1776_absent-1:latest';
    const refused = provider.acquire({ ...ROOT_IMAGE, image }, ids.next('missing'), 60_000);
    await expect(refused).rejects.toBeInstanceOf(SandboxImageMissingError);
    await expect(refused).rejects.toThrow(/docker pull .*docker save .*docker load/);
    await expect(
      provider.acquire({ ...ROOT_IMAGE, image: 'openclaw/absent' }, ids.next('own'), 60_000),
    ).rejects.toThrow(/build it with `openclaw-rl images build`/);
  }, 120_000);
});
