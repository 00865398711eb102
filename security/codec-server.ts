// The codec server: Temporal's remote codec protocol (POST <prefix>/encode and <prefix>/decode, Payloads as
// protobuf JSON) over the project's AES-GCM codec, so the Temporal UI (its codec-endpoint setting) and the
// `temporal` CLI (`--codec-endpoint`) show decrypted payloads to whoever runs it with the key ring. The UI
// calls it from the browser, so it answers CORS preflights for the UI's origins with exactly the headers the
// UI sends (content-type, x-namespace, and authorization when it passes an access token), credentials allowed.
// Whoever holds its token can decrypt, so every codec call must carry it: as `Authorization: Bearer <token>`
// (the `temporal` CLI's `--codec-auth`/`TEMPORAL_CODEC_AUTH`) or as the first segment of the path (the UI can
// send no fixed header without its own sign-in, so its codec endpoint is `http://127.0.0.1:8234/<token>`).
// A Host that is not a loopback or configured name is refused (a rebinding page names its own host), and so
// is an Origin other than the UI's (a page elsewhere gets no answer, and no CORS grant either).

import cors from '@fastify/cors';
import type { Payload, PayloadCodec } from '@temporalio/common';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { LoggerOptions } from 'pino';
import { z } from 'zod';
import type { OpenClawConfig } from '../core/config.js';
import { sameToken } from './codec-token.js';
import { isLoopbackHost } from './loopback-host.js';

/** The Temporal UI origins this project runs: the dev server's UI (8233) and compose's (8080). */
export const DEFAULT_UI_ORIGINS = ['8233', '8080'].flatMap((port) => [
  `http://localhost:${port}`,
  `http://127.0.0.1:${port}`,
]);

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'expected base64');

/** Payloads as protobuf JSON: metadata values and data are base64. */
const payloadsBody = z.object({
  payloads: z
    .array(
      z.object({
        metadata: z.record(z.string(), base64).nullish(),
        data: base64.nullish(),
      }),
    )
    .max(100_000),
});

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Origins (scheme://host:port) of the UI pages allowed to call it. */
  corsOrigins: readonly string[];
  /** The token every codec call must carry (header or first path segment). */
  token: string;
  /** Host names (no port) allowed in the Host header besides loopback ones. */
  hosts?: readonly string[];
  /** Largest request body (default 64 MiB: a UI decodes a page of history events at once). */
  bodyLimitBytes?: number;
  logger?: boolean | LoggerOptions;
}

export function createCodecServer(options: CodecServerOptions): FastifyInstance {
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimitBytes ?? 64 * 1024 * 1024,
  });
  if (options.token.length < 16) throw new Error('the codec server needs a token of 16 characters or more');
  const hosts = new Set((options.hosts ?? []).map((h) => h.toLowerCase()));
  const origins = new Set(options.corsOrigins);
  // Before CORS, so a refused request gets no grant either.
  app.addHook('onRequest', async (request, reply) => {
    const host = hostName(request.headers.host);
    if (host === null || !(isLoopbackHost(host) || hosts.has(host)))
      return reply.code(421).send({
        error: `Host ${JSON.stringify(request.headers.host ?? '')} is not one this codec server answers (loopback or codecServer.hosts)`,
      });
    const origin = request.headers.origin;
    if (origin !== undefined && !origins.has(origin))
      return reply
        .code(403)
        .send({ error: `origin ${origin} may not call this codec server (codecServer.corsOrigins)` });
    // Preflights carry no credentials by design; the health check tells nothing.
    if (request.method === 'OPTIONS' || request.url === '/healthz') return;
    if (!carriesToken(request.headers.authorization, request.url, options.token))
      return reply.code(401).header('www-authenticate', 'Bearer').send({
        error:
          'the codec server needs its token: "Authorization: Bearer <token>" or the endpoint http://<host>:<port>/<token>',
      });
  });
  app.register(cors, {
    origin: [...options.corsOrigins],
    methods: ['POST'],
    allowedHeaders: ['content-type', 'x-namespace', 'authorization'],
    credentials: true,
    maxAge: 600,
  });
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    const status =
      error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    return reply.code(status).send({ error: error.message });
  });

  app.register(async (routes) => {
    routes.get('/healthz', async () => ({ ok: true }));
    // The protocol names the operation by the last part of the path, so the server can sit under any prefix.
    routes.post('/*', async (request, reply) => {
      const operation = request.url.split('?')[0]?.split('/').at(-1);
      if (operation !== 'encode' && operation !== 'decode')
        return reply
          .code(404)
          .send({ error: `no codec operation at ${request.url}; use …/encode or …/decode` });
      const parsed = payloadsBody.safeParse(request.body);
      if (!parsed.success)
        return reply
          .code(400)
          .send({ error: `expected {"payloads": [...]}: ${parsed.error.issues[0]?.message}` });
      const payloads = parsed.data.payloads.map(fromJson);
      try {
        const converted =
          operation === 'encode'
            ? await options.codec.encode(payloads)
            : await options.codec.decode(payloads);
        return { payloads: converted.map(toJson) };
      } catch (error) {
        return reply.code(400).send({ error: (error as Error).message });
      }
    });
  });
  return app;
}

/** The configured origins, else the project's UI origins plus any given (a dev server's own UI). */
export function codecCorsOrigins(config: OpenClawConfig, extra: readonly string[] = []): string[] {
  if (config.codecServer.corsOrigins.length > 0) return [...config.codecServer.corsOrigins];
  return [...new Set([...DEFAULT_UI_ORIGINS, ...extra])];
}

/** The host name of a Host header, without its port and brackets; null when there is none. */
function hostName(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^(\[[^\]]+\]|[^:]+)(?::\d+)?$/.exec(header.trim());
  return match?.[1] ? match[1].replace(/^\[|\]$/g, '').toLowerCase() : null;
}

function carriesToken(authorization: string | undefined, url: string, token: string): boolean {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
  if (bearer !== undefined && sameToken(bearer, token)) return true;
  const first = url.split('?')[0]?.split('/')[1] ?? '';
  let segment: string;
  try {
    segment = decodeURIComponent(first);
  } catch {
    return false;
  }
  return sameToken(segment, token);
}

type JsonPayload = z.infer<typeof payloadsBody>['payloads'][number];

function fromJson(payload: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    ),
    data: Buffer.from(payload.data ?? '', 'base64'),
  };
}

function toJson(payload: Payload): { metadata: Record<string, string>; data: string } {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [
        key,
        Buffer.from(value ?? new Uint8Array()).toString('base64'),
      ]),
    ),
    data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
  };
}
