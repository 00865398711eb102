// The containers an env host holds for its rollouts: each rollout's sandbox with its lease, renewed as the
// rollout's activities heartbeat (`keepAlive`); found again after a worker restart (`provider.attach`), or
// re-created with the recorded tool calls replayed; and the throwaway containers evaluations run in.

import { ApplicationFailure, Context } from '@temporalio/activity';
import { SandboxDiskQuotaError, SandboxImageMissingError } from '../environments/docker-errors.js';
import type { Environment, EnvTask, EpisodeStep } from '../environments/environment.js';
import type { Sandbox, SandboxProvider, SandboxSpec } from '../environments/sandbox.js';
import type { SampleStore } from '../store/sample-store.js';
import type { EpisodeRef } from './env-activity-types.js';
import { type PlacementRecord, type ResetRecord, readTranscript, rolloutKeys } from './rollout-records.js';

/** The rollout id an evaluation container is labelled with. */
export function evaluationRolloutId(rolloutId: string): string {
  return `${rolloutId}.eval`;
}

interface Lease {
  sandbox: Sandbox;
  leaseMs: number;
  renewedAt: number;
}

/**
 * A sandbox that cannot be had (its image is missing and cannot be pulled, or the rollout outgrew its disk
 * quota) fails the same way again: no retry.
 */
async function acquiring<T>(acquire: () => Promise<T>): Promise<T> {
  try {
    return await acquire();
  } catch (error) {
    if (error instanceof SandboxImageMissingError || error instanceof SandboxDiskQuotaError)
      throw ApplicationFailure.nonRetryable(error.message, error.name);
    throw error;
  }
}

function log(): Context['log'] | null {
  try {
    return Context.current().log;
  } catch {
    return null;
  }
}

export interface RolloutSandboxDependencies {
  hostId: string;
  /** Null on a host without containers: it serves container-free kinds only. */
  provider: SandboxProvider | null;
  store: SampleStore;
}

export function createRolloutSandboxes(deps: RolloutSandboxDependencies) {
  const { hostId, provider, store } = deps;
  const leases = new Map<string, Lease>();

  function requireProvider(kind: string): SandboxProvider {
    if (!provider)
      throw ApplicationFailure.nonRetryable(
        `environment "${kind}" needs a container and env host ${hostId} has no sandbox provider`,
        'NoSandboxProvider',
      );
    return provider;
  }

  function keepAlive(rolloutId: string): void {
    const lease = leases.get(rolloutId);
    if (!lease || !provider) return;
    const now = Date.now();
    if (now - lease.renewedAt < lease.leaseMs / 3) return;
    lease.renewedAt = now;
    provider.renew(rolloutId, lease.leaseMs).catch((error: Error) => {
      log()?.warn('lease renewal failed', { rolloutId, error: error.message });
    });
  }

  async function replay(ref: EpisodeRef, environment: Environment, task: EnvTask, sandbox: Sandbox) {
    if (!(await store.get<ResetRecord>(rolloutKeys.reset(ref.rolloutId)))) return; // reset runs next anyway
    await environment.reset({ task, sandbox, history: [] });
    const { history } = await readTranscript(store, ref.rolloutId, Number.MAX_SAFE_INTEGER);
    const replayed: EpisodeStep[] = [];
    for (const entry of history) {
      await environment.step({ task, sandbox, history: replayed }, entry.action);
      replayed.push(entry);
    }
    log()?.warn('container re-created and recorded tool calls replayed', {
      rolloutId: ref.rolloutId,
      containerId: sandbox.id,
      calls: replayed.length,
    });
  }

  /** The rollout's container on this host: the one in hand, the one still running, or a new one replayed. */
  async function sandboxFor(
    ref: EpisodeRef,
    environment: Environment,
    task: EnvTask,
  ): Promise<Sandbox | null> {
    const spec = environment.sandboxSpec(task);
    if (!spec) return null;
    const held = leases.get(ref.rolloutId);
    if (held) return held.sandbox;
    const sandboxes = requireProvider(environment.kind);
    const attached = await sandboxes.attach(ref.rolloutId);
    if (attached) {
      await sandboxes.renew(ref.rolloutId, ref.leaseMs);
      leases.set(ref.rolloutId, { sandbox: attached, leaseMs: ref.leaseMs, renewedAt: Date.now() });
      return attached;
    }
    // A step still running when its rollout was cancelled and released must not bring the container back:
    // nothing would release it again (the release marks the rollout before it removes the container).
    if (await store.get(rolloutKeys.released(ref.rolloutId)))
      throw ApplicationFailure.nonRetryable(
        `rollout ${ref.rolloutId} was released; its container is not created again`,
        'RolloutReleased',
      );
    const { sandbox } = await acquiring(() => sandboxes.acquire(spec, ref.rolloutId, ref.leaseMs));
    leases.set(ref.rolloutId, { sandbox, leaseMs: ref.leaseMs, renewedAt: Date.now() });
    await replay(ref, environment, task, sandbox);
    const placement: PlacementRecord = {
      rolloutId: ref.rolloutId,
      hostId,
      containerId: sandbox.id,
      acquiredAt: new Date().toISOString(),
    };
    await store.put(rolloutKeys.placement(ref.rolloutId), placement);
    return sandbox;
  }

  /** A throwaway container for the evaluation (its own lease), always removed afterwards. */
  function freshSandboxFor(ref: EpisodeRef, sandboxes: SandboxProvider) {
    return async <T>(spec: SandboxSpec, use: (sandbox: Sandbox) => Promise<T>): Promise<T> => {
      const id = evaluationRolloutId(ref.rolloutId);
      await sandboxes.release(id); // a half-used one from an attempt that died is not fresh
      const { sandbox } = await sandboxes.acquire(spec, id, ref.leaseMs);
      try {
        return await use(sandbox);
      } finally {
        await sandboxes.release(id).catch((error: Error) => {
          log()?.warn('evaluation container not removed (its lease will expire)', {
            id,
            error: error.message,
          });
        });
      }
    };
  }

  /** Creates the rollout's container for `spec` and holds it. */
  async function acquire(ref: EpisodeRef, kind: string, spec: SandboxSpec): Promise<Sandbox> {
    const sandboxes = requireProvider(kind);
    const { sandbox } = await acquiring(() => sandboxes.acquire(spec, ref.rolloutId, ref.leaseMs));
    leases.set(ref.rolloutId, { sandbox, leaseMs: ref.leaseMs, renewedAt: Date.now() });
    return sandbox;
  }

  return {
    requireProvider,
    keepAlive,
    sandboxFor,
    acquire,
    freshSandboxFor,
    /** The rollout's sandbox this host holds, if any. */
    held: (rolloutId: string): Sandbox | undefined => leases.get(rolloutId)?.sandbox,
    /** Lets the rollout's sandbox go (after its release). */
    forget: (rolloutId: string): void => {
      leases.delete(rolloutId);
    },
  };
}
