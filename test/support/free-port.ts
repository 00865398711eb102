// Ports for a server that a test starts later (a child process, a container), picked where nothing else will take
// them in between. A port the OS picks for `listen(0)` is in the kernel's ephemeral range, and so is the local
// port of every outgoing connection: with many tests running at once, another connection or another test's
// listener can take it before the child binds it (seen: the frozen judge engine `dev` starts beside the engine
// tens of seconds after its port was checked). Ports below that range are never handed out by the kernel.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The lowest port picked here: clear of the well-known and registered services a machine usually runs. */
const LOWEST = 10_000;

/** The first port of the kernel's ephemeral range (Linux's default when it cannot be read). */
function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    const port = Number(low);
    return Number.isInteger(port) && port > 0 ? port : 32_768;
  } catch {
    return 32_768;
  }
}

const EPHEMERAL_LOW = ephemeralLow();

/** Whether `port` can be bound on 127.0.0.1 now. */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port the OS picks (`listen(0)`), released: for when the ephemeral range is all there is. */
function osPickedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The ports this process may pick: vitest's parallel workers (VITEST_POOL_ID) each get a slice of their own, so
 * two test files never pick the same port; within a process, a port handed out (either of a pair) is never
 * handed out again, since its server may not have bound it yet. The two lanes of `npm run test:ts` are two
 * vitest processes whose workers both count from pool 1: scripts/test-lanes.sh names each lane (TEST_LANE), and
 * lane 2's workers take the upper half of the slices.
 */
const SLICES = 8;
const pool = Number(process.env.VITEST_POOL_ID);
const lane = Number(process.env.TEST_LANE);
const laneOffset = lane === 2 ? SLICES / 2 : 0;
const sliced = Number.isInteger(pool) && pool > 0;
const sliceSize = Math.floor((EPHEMERAL_LOW - LOWEST) / (sliced ? SLICES : 1));
const sliceStart = LOWEST + (sliced ? ((laneOffset + pool) % SLICES) * sliceSize : 0);
const handedOut = new Set<number>();

/** A free port whose `+ offset` is free too (the Temporal dev server puts its UI on port + 1000). */
export async function freePortPair(offset: number): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port =
      sliceSize - offset >= 500
        ? sliceStart + Math.floor(Math.random() * (sliceSize - offset))
        : await osPickedPort();
    if (port + offset > 65_535 || handedOut.has(port) || handedOut.has(port + offset)) continue;
    if ((await isPortFree(port)) && (offset === 0 || (await isPortFree(port + offset)))) {
      handedOut.add(port).add(port + offset);
      return port;
    }
  }
  throw new Error(`no free port pair (port, port + ${offset}) found`);
}

/** A TCP port nothing listens on right now, below the ephemeral range. */
export function freePort(): Promise<number> {
  return freePortPair(0);
}
