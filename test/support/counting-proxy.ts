import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A plain HTTP proxy in front of a real engine that counts the requests it forwards, by path. Requests and
 * responses (streams included) pass through untouched, so a test can tell whether the gateway asked the engine
 * at all (an `Idempotency-Key` replay must not). `hold()` keeps the engine's answers back until released, so a
 * test can act while a request is certainly still in flight.
 */
export interface CountingProxy {
  url: string;
  count(path: string): number;
  /** Holds every answer that arrives from now on; the returned function lets them (and later ones) through. */
  hold(): () => void;
  close(): Promise<void>;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  const counts = new Map<string, number>();
  let held: Promise<void> = Promise.resolve();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const forwarded = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        void held.then(() => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
      },
    );
    forwarded.on('error', () => res.destroy());
    // A client that leaves aborts the engine request, as it would without the proxy.
    res.on('close', () => forwarded.destroy());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    count: (path) => counts.get(path) ?? 0,
    hold() {
      let release = () => {};
      held = new Promise((resolve) => {
        release = resolve;
      });
      return release;
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
