// Warm pools: the bookkeeping against a fake backend, then real containers: claim, refill, idempotent acquire,
// attach / renew / release from a new provider instance, cold fallback, and the end of pool containers when
// their worker dies (keeper) or nobody renews them (reaper). Needs the image openclaw/sandbox-python.

import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxProvider, sandboxContainerName, specHash } from '../../environments/docker-sandbox.js';
import type { Environment } from '../../environments/environment.js';
import { CLAIM_FILE, LABELS, LEASE_FILE } from '../../environments/sandbox-lease.js';
import { parseToolcallConfig } from '../../environments/toolcall/toolcall-config.js';
import { ToolcallEnvironment } from '../../environments/toolcall/toolcall-environment.js';
import {
  type IdleContainer,
  parseWarmPoolSettings,
  parseWarmPoolSizes,
  WarmPool,
  type WarmPoolBackend,
} from '../../environments/warm-pool.js';
import { envRolloutWorkflowId } from '../../temporal/workflow-ids.js';
import type { EnvRolloutInput, EnvRolloutResult } from '../../workflows/agentic-signals.js';
import {
  docker,
  ensureImage,
  eventually,
  IMAGE_BUILD_TIMEOUT_MS,
  PYTHON_SPEC,
  rolloutIds,
} from '../support/sandbox-fixture.js';
import { type ScriptedPolicyServer, startScriptedPolicy } from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from '../track2/track2-harness.js';

const ids = rolloutIds('warm-pool');
/** Pool names unique to this file's process, so the cleanup finds exactly its own pool containers. */
const POOL = `wp-${process.pid}-${Date.now().toString(36)}`;
const TEN_MINUTES = 10 * 60_000;
const IMAGE = PYTHON_SPEC.image;

/** Every container (any state) of this file's pools: idle ones and claimed ones keep the pool label. */
async function poolContainers(): Promise<{ id: string; name: string; pool: string }[]> {
  const containers = await docker.listContainers({ all: true, filters: { label: [LABELS.pool] } });
  return containers
    .filter((c) => c.Labels[LABELS.pool]?.startsWith(POOL))
    .map((c) => ({
      id: c.Id,
      name: (c.Names[0] ?? '').replace(/^\//, ''),
      pool: c.Labels[LABELS.pool] ?? '',
    }));
}

const idleOf = async (instance: string) =>
  (await poolContainers()).filter((c) => c.pool === instance && c.name.startsWith('openclaw-pool-'));

const gone = (id: string) =>
  docker
    .getContainer(id)
    .inspect()
    .then(
      () => false,
      (error: { statusCode?: number }) => error.statusCode === 404,
    );

const workers: ChildProcess[] = [];

afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL');
  await ids.removeAll();
  await Promise.all(
    (await poolContainers()).map((c) =>
      docker
        .getContainer(c.id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  expect(await ids.leftovers()).toEqual([]);
  expect(await poolContainers()).toEqual([]);
});

describe('warm pool bookkeeping (fake backend)', () => {
  /** TEST DOUBLE of the container runtime: idle containers are records; `lost` ones fail their renewal. */
  function fakeBackend() {
    const live = new Set<string>();
    const lost = new Set<string>();
    let next = 0;
    const backend: WarmPoolBackend = {
      async createIdle(spec, specKey, pool, leaseMs) {
        next += 1;
        const name = `idle-${next}`;
        live.add(name);
        return {
          name,
          id: `id-${next}`,
          labels: { pool, specKey, image: spec.image },
          expiresAt: Date.now() + leaseMs,
        };
      },
      async renewIdle(container: IdleContainer) {
        return live.has(container.name) && !lost.has(container.name);
      },
      async removeIdle(container: IdleContainer) {
        live.delete(container.name);
      },
    };
    return { backend, live, lost };
  }

  it('validates its settings and the --warm-pool flag', () => {
    expect(parseWarmPoolSizes('openclaw/sandbox-python=4, openclaw/sandbox-shell=0')).toEqual({
      'openclaw/sandbox-python': 4,
      'openclaw/sandbox-shell': 0,
    });
    expect(() => parseWarmPoolSizes('openclaw/sandbox-python')).toThrow(/image=N/);
    expect(() => parseWarmPoolSettings({ sizes: { a: -1 } })).toThrow(/sizes\.a/);
    expect(() => parseWarmPoolSettings({ leaseMs: 10 })).toThrow(/leaseMs/);
    expect(parseWarmPoolSettings({})).toMatchObject({ sizes: {}, leaseMs: 60_000, name: 'pool' });
  });

  it('fills per spec, hands each container out once, refills, and removes idle ones on close', async () => {
    const { backend, live } = fakeBackend();
    const pool = new WarmPool(backend, parseWarmPoolSettings({ sizes: { [IMAGE]: 3 }, leaseMs: 60_000 }));
    const other = { ...PYTHON_SPEC, image: 'openclaw/other' };
    expect(pool.take(other, 'k-other')).toBeNull(); // no size for this image: off
    await pool.prewarm(PYTHON_SPEC, 'k1');
    expect(pool.readyCount('k1')).toBe(3);
    const taken = [pool.take(PYTHON_SPEC, 'k1'), pool.take(PYTHON_SPEC, 'k1')];
    expect(new Set(taken.map((c) => c?.id)).size).toBe(2);
    await pool.prewarm(PYTHON_SPEC, 'k1'); // the refill the takes started
    expect(pool.readyCount('k1')).toBe(3);
    expect(pool.stats()).toMatchObject({ claimed: 2, created: 5 });
    // A spec with other limits is another pool.
    await pool.prewarm({ ...PYTHON_SPEC, limits: { ...PYTHON_SPEC.limits, pids: 32 } }, 'k2');
    expect(pool.readyCount('k2')).toBe(3);
    await pool.close();
    expect(live.size).toBe(2); // only the two handed out
    expect(pool.take(PYTHON_SPEC, 'k1')).toBeNull();
  });

  it('drops containers whose renewal finds them gone, and surfaces a pool that cannot fill', async () => {
    const { backend, lost } = fakeBackend();
    const pool = new WarmPool(backend, parseWarmPoolSettings({ sizes: { [IMAGE]: 2 }, leaseMs: 5_000 }));
    await pool.prewarm(PYTHON_SPEC, 'k');
    lost.add('idle-1');
    await eventually(async () => pool.stats().lost === 1, 5_000, 100);
    await pool.prewarm(PYTHON_SPEC, 'k');
    expect(pool.readyCount('k')).toBe(2);
    expect(pool.stats().created).toBe(3);
    await pool.close();
    const failing = new WarmPool(
      { ...backend, createIdle: async () => Promise.reject(new Error('no such image')) },
      parseWarmPoolSettings({ sizes: { [IMAGE]: 1 } }),
    );
    await expect(failing.prewarm(PYTHON_SPEC, 'k')).rejects.toThrow(/no such image/);
    await failing.close();
  });
});

describe('warm pool with real containers', () => {
  const provider = new DockerSandboxProvider({
    keeperIntervalSeconds: 1,
    warmPool: { name: `${POOL}-a`, sizes: { [IMAGE]: 2 }, leaseMs: 30_000 },
  });
  const instance = provider.warmPoolStats()?.instance ?? '';

  beforeAll(async () => {
    await ensureImage(IMAGE);
    await provider.prewarm(PYTHON_SPEC);
  }, IMAGE_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await provider.close();
    expect(await idleOf(instance)).toEqual([]);
  });

  it('claims a ready container: renamed to the rollout, claim file, rollout lease; then refills', async () => {
    const idle = await idleOf(instance);
    expect(idle).toHaveLength(2);
    const rolloutId = ids.next('claim');
    const { sandbox, lease } = await provider.acquire(PYTHON_SPEC, rolloutId, TEN_MINUTES);
    expect(idle.map((c) => c.id)).toContain(sandbox.id);
    const info = await docker.getContainer(sandbox.id).inspect();
    expect(info.Name).toBe(`/${sandboxContainerName(rolloutId)}`);
    expect(info.Config.Labels[LABELS.specHash]).toBe(specHash(PYTHON_SPEC));
    expect(info.HostConfig.NetworkMode).toBe('none');
    expect((await sandbox.readFile(CLAIM_FILE)).toString()).toBe(`${rolloutId}\n`);
    expect(Number((await sandbox.readFile(LEASE_FILE)).toString())).toBe(lease.expiresAt);
    const whoami = await sandbox.exec(['whoami'], { timeoutMs: 10_000 });
    expect(whoami.stdout.trim()).toBe('agent');
    expect(provider.warmPoolStats()).toMatchObject({ claimed: 1, missed: 0 });
    expect(await eventually(async () => (await idleOf(instance)).length === 2, 30_000)).toBe(true);

    // Idempotent: the same rollout gets the same container, without taking another from the pool.
    const again = await provider.acquire(PYTHON_SPEC, rolloutId, TEN_MINUTES);
    expect(again.sandbox.id).toBe(sandbox.id);
    expect(provider.warmPoolStats()).toMatchObject({ claimed: 1 });
  });

  it('behaves like a cold container for a new provider instance: attach, renew, acquire, release', async () => {
    const rolloutId = ids.next('restart');
    const { sandbox } = await provider.acquire(PYTHON_SPEC, rolloutId, TEN_MINUTES);
    await sandbox.writeFile('/tmp/state', 'kept');
    const restarted = new DockerSandboxProvider({ keeperIntervalSeconds: 1 });
    const attached = await restarted.attach(rolloutId);
    expect(attached?.id).toBe(sandbox.id);
    expect((await attached?.readFile('/tmp/state'))?.toString()).toBe('kept');
    const before = Date.now();
    await restarted.renew(rolloutId, 2 * TEN_MINUTES);
    expect(Number((await sandbox.readFile(LEASE_FILE)).toString())).toBeGreaterThanOrEqual(
      before + 2 * TEN_MINUTES,
    );
    expect((await restarted.acquire(PYTHON_SPEC, rolloutId, TEN_MINUTES)).sandbox.id).toBe(sandbox.id);
    // Another rollout's id does not reach it.
    expect(await restarted.attach(ids.next('stranger'))).toBeNull();
    await restarted.release(rolloutId);
    expect(await gone(sandbox.id)).toBe(true);
    expect(await restarted.attach(rolloutId)).toBeNull();
    await restarted.release(rolloutId); // already gone: fine
  });

  it('concurrent acquires of one rollout end with one container', async () => {
    await provider.prewarm(PYTHON_SPEC);
    const rolloutId = ids.next('race');
    const results = await Promise.all(
      [0, 1, 2].map(() => provider.acquire(PYTHON_SPEC, rolloutId, TEN_MINUTES)),
    );
    expect(new Set(results.map((r) => r.sandbox.id)).size).toBe(1);
    // The winner may be a claimed pool container or a cold one (the third acquire found the pool empty).
    const named = await docker.listContainers({
      all: true,
      filters: { name: [sandboxContainerName(rolloutId)] },
    });
    expect(named.map((c) => c.Id)).toEqual([results[0]?.sandbox.id]);
    // Losers' idle containers carry a claim now: removed, not handed out again.
    expect(await eventually(async () => (await idleOf(instance)).length === 2, 30_000)).toBe(true);
    await provider.release(rolloutId);
  });

  it('falls back to cold creation when the pool is empty', async () => {
    const rollouts = [ids.next('burst-0'), ids.next('burst-1'), ids.next('burst-2'), ids.next('burst-3')];
    const acquired = await Promise.all(rollouts.map((r) => provider.acquire(PYTHON_SPEC, r, TEN_MINUTES)));
    expect(new Set(acquired.map((a) => a.sandbox.id)).size).toBe(4);
    const labels = await Promise.all(
      acquired.map(async (a) => (await docker.getContainer(a.sandbox.id).inspect()).Config.Labels),
    );
    const warm = labels.filter((l) => l[LABELS.pool] !== undefined).length;
    const cold = labels.filter((l, i) => l[LABELS.rolloutId] === rollouts[i]).length;
    expect(warm + cold).toBe(4);
    expect(warm).toBeGreaterThanOrEqual(1);
    expect(cold).toBeGreaterThanOrEqual(1);
    for (const r of rollouts) await provider.release(r);
  });

  it('does not hand out a pool container of another spec', async () => {
    const rolloutId = ids.next('other-spec');
    const spec = { ...PYTHON_SPEC, limits: { ...PYTHON_SPEC.limits, pids: 48 } };
    const { sandbox } = await provider.acquire(spec, rolloutId, TEN_MINUTES);
    const info = await docker.getContainer(sandbox.id).inspect();
    expect(info.HostConfig.PidsLimit).toBe(48);
    await provider.release(rolloutId);
  });
});

describe('warm pool containers when their worker dies', () => {
  // The held pools' scope: another suite's reaper on the same Docker engine must not take their containers
  // before this file's reaper does.
  const REAPER_SCOPE = `warm-pool-test-${process.pid}`;

  async function holdPool(label: string, keeperSeconds: number) {
    const pool = `${POOL}-${label}`;
    const rolloutId = ids.next(label);
    const worker = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'test/sandbox/hold-warm-pool.ts',
        pool,
        rolloutId,
        String(keeperSeconds),
        REAPER_SCOPE,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    workers.push(worker);
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: worker.stdout }).once('line', resolve);
      worker.once('exit', (code) => reject(new Error(`hold-warm-pool exited with ${code}`)));
    });
    const { claimed } = JSON.parse(line) as { claimed: string };
    const all = (await poolContainers()).filter((c) => c.pool.startsWith(`${pool}-`)).map((c) => c.id);
    expect(all).toContain(claimed);
    expect(all).toHaveLength(3); // two idle, one claimed
    worker.kill('SIGKILL');
    return all;
  }

  it('the keeper ends idle and claimed containers once their leases run out', async () => {
    const all = await holdPool('keeper', 1);
    const allGone = await eventually(async () => (await Promise.all(all.map(gone))).every(Boolean), 40_000);
    expect(allGone).toBe(true);
  }, 60_000);

  it('the reaper removes pool containers whose lease ended', async () => {
    // A keeper that checks only once an hour: the reaper has to do it.
    const all = await holdPool('reaper', 3600);
    // Reap until the leases have run out (a condition, not a guess at how long that takes on a busy host).
    const reaped = new Set<string>();
    const provider = new DockerSandboxProvider({ scope: REAPER_SCOPE });
    const allReaped = await eventually(async () => {
      for (const id of await provider.reapExpired()) reaped.add(id);
      return all.every((id) => reaped.has(id));
    }, 40_000);
    expect(allReaped).toBe(true);
    for (const id of all) expect(await gone(id)).toBe(true);
  }, 60_000);
});

describe('toolcall rollouts through Temporal on a host with a warm pool', () => {
  let env: TestWorkflowEnvironment;
  let policy: ScriptedPolicyServer;
  let t2: Track2Harness;
  const config = parseToolcallConfig({ limits: PYTHON_SPEC.limits, pythonTimeoutMs: 10_000 });
  const toolcall = new ToolcallEnvironment({ config });
  const registry = new Map<string, Environment>([['toolcall', toolcall]]);
  const provider = new DockerSandboxProvider({
    warmPool: { name: `${POOL}-t`, sizes: { [config.image]: 2 } },
  });

  beforeAll(async () => {
    env = await connectTestEnvironment();
    policy = await startScriptedPolicy(({ step }) =>
      step === 0
        ? { toolCalls: [{ name: 'code_interpreter', arguments: { code: 'print(sum(range(10)))' } }] }
        : { content: 'The interpreter printed 45. \\boxed{45}' },
    );
    t2 = await startTrack2(env);
    await t2.startEnvHost({ hostId: `${POOL}-host`, registry, provider });
    await provider.prewarm(toolcall.sandboxSpec(await toolcall.loadTask('telescoping-sum')));
  }, 60_000);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
    await provider.close();
  });

  it('runs each rollout in a claimed pool container and releases it', async () => {
    const rollouts = [ids.next('temporal-0'), ids.next('temporal-1')];
    const results = await Promise.all(
      rollouts.map(async (rolloutId) => {
        const input: EnvRolloutInput = {
          rolloutId,
          env: 'toolcall',
          taskId: 'telescoping-sum',
          policy: { url: policy.url },
          envTaskQueue: t2.envQueue,
          maxTurns: 3,
        };
        return (await env.client.workflow.execute('envRolloutWorkflow', {
          taskQueue: t2.workflowQueue,
          workflowId: envRolloutWorkflowId(rolloutId),
          args: [input],
        })) as EnvRolloutResult;
      }),
    );
    for (const result of results) {
      expect(result).toMatchObject({ status: 'COMPLETED', steps: 2 });
      expect(result.containerIds).toHaveLength(1);
      expect(await gone(result.containerIds[0] as string)).toBe(true);
    }
    expect(provider.warmPoolStats()).toMatchObject({ claimed: 2, missed: 0 });
  }, 60_000);
});
