// A stand-in for an env worker: acquires a sandbox, prints its container id, and then does nothing until it
// is killed. The lease test kills it with SIGKILL and watches the container go away on its own.
// Usage: tsx test/sandbox/hold-sandbox.ts <rolloutId> <leaseMs>
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import { PYTHON_SPEC } from '../support/sandbox-fixture.js';

const [rolloutId, leaseMs] = process.argv.slice(2);
if (rolloutId === undefined || leaseMs === undefined)
  throw new Error('usage: hold-sandbox.ts <rolloutId> <leaseMs>');
const provider = new DockerSandboxProvider({ keeperIntervalSeconds: 1 });
const { sandbox } = await provider.acquire(PYTHON_SPEC, rolloutId, Number(leaseMs));
console.log(JSON.stringify({ containerId: sandbox.id }));
setInterval(() => {}, 60_000);
