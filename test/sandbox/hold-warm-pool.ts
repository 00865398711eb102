// A stand-in for an env worker with a warm pool: fills a pool of 2 (idle leases of 5 s), claims one container
// for a rollout (lease 5 s), waits for the refill, prints every container id and then does nothing until it is
// killed. The warm-pool test kills it with SIGKILL and watches the containers go away.
// Usage: tsx test/sandbox/hold-warm-pool.ts <poolName> <rolloutId> <keeperIntervalSeconds>
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import { PYTHON_SPEC } from '../support/sandbox-fixture.js';

const [pool, rolloutId, keeperSeconds, scope] = process.argv.slice(2);
if (pool === undefined || rolloutId === undefined || keeperSeconds === undefined)
  throw new Error('usage: hold-warm-pool.ts <poolName> <rolloutId> <keeperIntervalSeconds>');
const provider = new DockerSandboxProvider({
  ...(scope !== undefined && { scope }),
  keeperIntervalSeconds: Number(keeperSeconds),
  warmPool: { name: pool, sizes: { [PYTHON_SPEC.image]: 2 }, leaseMs: 5_000 },
});
await provider.prewarm(PYTHON_SPEC);
const { sandbox } = await provider.acquire(PYTHON_SPEC, rolloutId, 5_000);
await provider.prewarm(PYTHON_SPEC);
console.log(JSON.stringify({ claimed: sandbox.id, stats: provider.warmPoolStats() }));
setInterval(() => {}, 60_000);
