import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the gateway's feedback API (`POST /v1/feedback`, docs/gateway.md#feedback), a plain HTTP server
 * that keeps every request it gets. It answers as the gateway does, with the gateway's messages: 401 without the bearer key, 400 for a malformed body, 404
 * when the session has no turn, 200 with the feedback object otherwise. Its sessions' latest main turns are
 * whatever the test gave it (`addTurn`): no model, no store.
 */
export interface FeedbackGatewayDouble {
  /** The base URL a provider config would hold (`.../v1`). */
  url: string;
  /** Every request, in arrival order: its path, headers and JSON body (null when not JSON). */
  requests: { path: string; headers: IncomingMessage['headers']; body: unknown }[];
  /** Makes `turnId` the session's latest main turn. */
  addTurn(sessionId: string, turnId: string): void;
  close(): Promise<void>;
}

export async function startFeedbackGatewayDouble(apiKey: string): Promise<FeedbackGatewayDouble> {
  const latest = new Map<string, string>();
  const requests: FeedbackGatewayDouble['requests'] = [];
  let served = 0;
  const error = (status: number, message: string, type: string) => ({
    status,
    body: { error: { message, type, param: null, code: null } },
  });

  const answer = (path: string, authorization: string | undefined, body: unknown) => {
    if (path !== '/v1/feedback') return error(404, `no route ${path}`, 'not_found_error');
    if (authorization !== `Bearer ${apiKey}`) return error(401, 'invalid api key', 'authentication_error');
    if (typeof body !== 'object' || body === null)
      return error(400, 'body must be a JSON object', 'invalid_request_error');
    const { session_id, turn_id, rating, correction } = body as Record<string, unknown>;
    if (rating !== undefined && (typeof rating !== 'number' || rating < -1 || rating > 1))
      return error(400, 'rating must be a number from -1 to 1', 'invalid_request_error');
    if (correction !== undefined && typeof correction !== 'string')
      return error(400, 'correction must be a string', 'invalid_request_error');
    if (rating === undefined && correction === undefined)
      return error(400, 'rating or correction is required', 'invalid_request_error');
    if (typeof session_id !== 'string' && typeof turn_id !== 'string')
      return error(400, 'session_id or turn_id is required', 'invalid_request_error');
    const turn = typeof turn_id === 'string' ? turn_id : latest.get(session_id as string);
    if (!turn) return error(404, `session ${session_id} has no recorded main turn here`, 'not_found_error');
    return {
      status: 200,
      body: {
        id: `fb-${++served}`,
        object: 'feedback',
        turn_id: turn,
        session_id: session_id ?? null,
        rating: rating ?? null,
        correction: correction ?? null,
      },
    };
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      let body: unknown = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        // not JSON: kept as null, answered 400
      }
      requests.push({ path, headers: req.headers, body });
      const { status, body: reply } = answer(path, req.headers.authorization, body);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    addTurn: (sessionId, turnId) => latest.set(sessionId, turnId),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
