import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A plain HTTP proxy in front of a real engine that can hold the engine's answer on chosen paths. The request
 * reaches the engine at once (the engine really trains); only the answer is late. A test uses it to make a
 * sub-second call (a training step on a tiny model) last long enough to kill its caller in the middle.
 * JSON bodies only: not for streaming responses.
 */
export interface DelayingProxy {
  url: string;
  /** Milliseconds to hold the answer of each path (`/train_step`); change it at any time. */
  delays: Map<string, number>;
  /** Requests on `path` received and not yet answered (or abandoned by their caller). */
  active(path: string): number;
  close(): Promise<void>;
}

export async function startDelayingProxy(target: string): Promise<DelayingProxy> {
  const base = target.replace(/\/+$/, '');
  const delays = new Map<string, number>();
  const active = new Map<string, number>();
  const bump = (path: string, by: number) => active.set(path, (active.get(path) ?? 0) + by);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    bump(path, 1);
    try {
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      const upstream = await fetch(`${base}${req.url ?? '/'}`, {
        method: req.method ?? 'GET',
        headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
        ...(body && req.method !== 'GET' && req.method !== 'HEAD' ? { body } : {}),
      });
      const answer = Buffer.from(await upstream.arrayBuffer());
      const delay = delays.get(path) ?? 0;
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      res.writeHead(upstream.status, {
        'content-type': upstream.headers.get('content-type') ?? 'application/json',
      });
      res.end(answer);
    } catch (error) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `proxy: ${(error as Error).message}` } }));
    } finally {
      bump(path, -1);
    }
  };

  const server: Server = createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    delays,
    active: (path) => active.get(path) ?? 0,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
