// A free TCP port on 127.0.0.1 for a Temporal dev server, whose Web UI takes the port + 1000.

import { createServer } from 'node:net';

function probe(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => {
      const chosen = (server.address() as { port: number }).port;
      server.close(() => resolve(chosen));
    });
  });
}

/** A free port whose +1000 neighbour is free too. */
export async function freePortPair(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await probe(0);
    if (port === null || port + 1000 > 65535) continue;
    if ((await probe(port + 1000)) !== null) return port;
  }
  throw new Error('no free port pair found');
}
