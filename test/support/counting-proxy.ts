import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A plain HTTP proxy in front of a real engine that counts the requests it forwards, by path, and keeps their
 * JSON bodies. Requests and responses (streams included) pass through untouched, so a test can tell whether
 * the gateway asked the engine at all (an `Idempotency-Key` replay must not) and what it asked for.
 * `hold()` keeps the engine's answers back until released, so a test can act while a request is certainly
 * still in flight.
 */
export interface CountingProxy {
  url: string;
  count(path: string): number;
  /** The JSON bodies of the requests forwarded to `path`, in arrival order (a body that is not JSON: null). */
  bodies(path: string): unknown[];
  /** Holds every answer that arrives from now on; the returned function lets them (and later ones) through. */
  hold(): () => void;
  close(): Promise<void>;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  const counts = new Map<string, number>();
  const bodies = new Map<string, unknown[]>();
  let held: Promise<void> = Promise.resolve();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (chunks.length === 0) return;
      let body: unknown = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        // not JSON: kept as null
      }
      bodies.set(path, [...(bodies.get(path) ?? []), body]);
    });
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
    bodies: (path) => bodies.get(path) ?? [],
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
