import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a client sent through the recorder, as the gateway received it. */
export interface RecordedCall {
  path: string;
  headers: IncomingHttpHeaders;
  /** The request's JSON body (null when it had none or it was not JSON). */
  body: unknown;
  /** The answer's status, once it came. */
  status?: number;
  /** The answer's JSON body, for answers that are not event streams (null until it came, or not JSON). */
  answer?: unknown;
}

/**
 * A plain HTTP proxy between a client (the OpenClaw agent) and the gateway that keeps every request it
 * forwards: the headers the client stamped and the body they belong to, so a test can check that each model
 * call carried its own session's `X-Session-Id`. Streams pass through untouched.
 *
 * `gatherChats(n)` holds chat-completion requests back (unsent) until `n` different sessions have one waiting,
 * then lets them all go: when it resolves `true`, those sessions' calls were certainly in flight at once.
 */
export interface ModelCallRecorder {
  /** The base URL a provider config holds (`.../v1`). */
  url: string;
  calls(path?: string): RecordedCall[];
  gatherChats(sessions: number, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

const CHAT = '/v1/chat/completions';

export async function startModelCallRecorder(gatewayUrl: string): Promise<ModelCallRecorder> {
  const gateway = new URL(gatewayUrl).origin;
  const calls: RecordedCall[] = [];
  let gathering: { sessions: number; waiting: { session: string; go: () => void }[] } | null = null;

  /** Lets the gathered requests go; `together` says whether all the sessions asked for had one waiting. */
  let finishGathering: (together: boolean) => void = () => {};

  const forward = (call: RecordedCall, raw: Buffer, res: import('node:http').ServerResponse) => {
    const target = new URL(gateway);
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path: call.path,
        headers: { ...call.headers, host: target.host },
      },
      (answer) => {
        call.status = answer.statusCode;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (String(answer.headers['content-type']).includes('text/event-stream')) {
          answer.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          res.write(chunk);
        });
        answer.on('end', () => {
          res.end();
          try {
            call.answer = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            call.answer = null;
          }
        });
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    upstream.end(raw);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: unknown = null;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        // none, or not JSON
      }
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (req.method !== 'POST') {
        // GETs (model lists, health) pass through unrecorded.
        const target = new URL(gateway);
        const upstream = httpRequest(
          {
            host: target.hostname,
            port: target.port,
            method: req.method,
            path: req.url,
            headers: req.headers,
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        upstream.on('error', () => res.destroy());
        upstream.end();
        return;
      }
      const call: RecordedCall = { path, headers: req.headers, body };
      calls.push(call);
      const go = () => forward(call, raw, res);
      if (path !== CHAT || !gathering) return go();
      const session = String(req.headers['x-session-id'] ?? '');
      gathering.waiting.push({ session, go });
      if (new Set(gathering.waiting.map((w) => w.session)).size >= gathering.sessions) finishGathering(true);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    calls: (path) => (path === undefined ? [...calls] : calls.filter((c) => c.path === path)),
    gatherChats(sessions, timeoutMs) {
      if (gathering) throw new Error('already gathering');
      const current: { sessions: number; waiting: { session: string; go: () => void }[] } = {
        sessions,
        waiting: [],
      };
      gathering = current;
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => finishGathering(false), timeoutMs);
        finishGathering = (together) => {
          clearTimeout(timer);
          gathering = null;
          finishGathering = () => {};
          for (const waiting of current.waiting) waiting.go();
          resolve(together);
        };
      });
    },
    close: () =>
      new Promise((resolve) => {
        finishGathering(false);
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
