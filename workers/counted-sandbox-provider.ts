// A sandbox provider that counts the containers this host holds for rollouts, for the running-containers
// gauge: acquired or re-attached ones count until released. Containers the reaper removes are counted off
// by the next release of their rollout (release succeeds when the container is already gone).

import type { SandboxProvider } from '../environments/sandbox.js';

export interface CountedSandboxProvider extends SandboxProvider {
  running(): number;
}

export function countedSandboxProvider(provider: SandboxProvider): CountedSandboxProvider {
  const held = new Set<string>();
  return {
    async acquire(spec, rolloutId, leaseMs) {
      const acquired = await provider.acquire(spec, rolloutId, leaseMs);
      held.add(rolloutId);
      return acquired;
    },
    async attach(rolloutId) {
      const sandbox = await provider.attach(rolloutId);
      if (sandbox) held.add(rolloutId);
      else held.delete(rolloutId);
      return sandbox;
    },
    renew: (rolloutId, leaseMs) => provider.renew(rolloutId, leaseMs),
    async release(rolloutId) {
      await provider.release(rolloutId);
      held.delete(rolloutId);
    },
    reapExpired: (now) => provider.reapExpired(now),
    ...(provider.close && { close: () => provider.close?.() ?? Promise.resolve() }),
    running: () => held.size,
  };
}
