// The codec server speaks Temporal's remote codec protocol (Payloads as protobuf JSON at …/encode and
// …/decode) and answers the Temporal UI's CORS preflight. What the UI sends is read from its own source
// (temporalio/ui src/lib/services/data-encoder.ts): POST `${endpoint}/decode` with `Content-Type:
// application/json` and `X-Namespace`, `Authorization` when it passes an access token, and `credentials:
// 'include'` when configured to, so a preflight asks for those headers from the UI's origin. With no sign-in
// of its own the UI sends no fixed Authorization header, so it carries the token in its endpoint's path; the
// `temporal` CLI sends `--codec-auth`/`TEMPORAL_CODEC_AUTH` verbatim as the Authorization header.

import type { AddressInfo } from 'node:net';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCodecServer, DEFAULT_UI_ORIGINS } from '../../security/codec-server.js';
import { AesGcmPayloadCodec } from '../../security/payload-codec.js';
import { newPayloadKey } from '../../security/payload-keys.js';

const UI = 'http://localhost:8233';
const TOKEN = 'ocrl-codec-test-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const codec = new AesGcmPayloadCodec({ currentId: 'k1', keys: new Map([['k1', newPayloadKey()]]) });

const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

describe('codec server', () => {
  let app: FastifyInstance;
  let url: string;

  beforeAll(async () => {
    app = createCodecServer({ codec, corsOrigins: DEFAULT_UI_ORIGINS, token: TOKEN });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app?.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-namespace': 'default',
        origin: UI,
        ...AUTH,
        ...headers,
      },
      body: JSON.stringify(body),
    });
  const sealed = async () =>
    (await codec.encode([defaultPayloadConverter.toPayload({ hint: 'weather' })])).map(toJson);

  it('answers the UI preflight from its origin with the headers it sends, credentials allowed', async () => {
    const preflight = await fetch(`${url}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: UI,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace,authorization',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(UI);
    expect(preflight.headers.get('access-control-allow-credentials')).toBe('true');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const allowed = preflight.headers.get('access-control-allow-headers')?.toLowerCase() ?? '';
    for (const header of ['content-type', 'x-namespace', 'authorization']) expect(allowed).toContain(header);
  });

  it('refuses other origins, with no CORS grant (a browser page elsewhere cannot call it)', async () => {
    const preflight = await fetch(`${url}/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const response = await post('/decode', { payloads: await sealed() }, { origin: 'http://evil.example' });
    expect(response.status).toBe(403);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(((await response.json()) as { error: string }).error).toMatch(/origin http:\/\/evil.example/);
  });

  // A process on this machine (or a page's script) that finds the port used to get any payload decrypted.
  it('refuses a call without the token, or with a wrong one (401), and decodes nothing', async () => {
    const payloads = await sealed();
    for (const headers of [{ authorization: '' }, { authorization: 'Bearer wrong-token-0123456789abcdef' }]) {
      for (const path of ['/decode', '/encode', '/wrong-token/decode']) {
        const response = await post(path, { payloads }, headers);
        expect(response.status, `${path} ${headers.authorization}`).toBe(401);
        expect(response.headers.get('www-authenticate')).toBe('Bearer');
        expect(JSON.stringify(await response.json())).not.toContain('weather');
      }
    }
  });

  // DNS rebinding: a page on attacker.example re-points its name at 127.0.0.1, so the browser sends its Host.
  it('refuses a Host that is not a loopback name (421), even with the right token', async () => {
    const { request } = await import('node:http');
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ payloads: [] });
        const req = request(
          `${url}/decode`,
          { method: 'POST', headers: { host, 'content-type': 'application/json', ...AUTH } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    expect(await status('attacker.example')).toBe(421);
    expect(await status('attacker.example:8234')).toBe(421);
    expect(await status('localhost:8234')).toBe(200);
    expect(await status('[::1]:8234')).toBe(200);
  });

  it('answers the token as the Authorization header (the CLI) or as the first path segment (the UI)', async () => {
    const payloads = await sealed();
    const byHeader = await post('/decode', { payloads });
    const byPath = await post(`/${TOKEN}/decode`, { payloads }, { authorization: '' });
    for (const response of [byHeader, byPath]) {
      expect(response.status).toBe(200);
      const decoded = (await response.json()) as { payloads: { data: string }[] };
      expect(JSON.parse(Buffer.from(decoded.payloads[0]?.data ?? '', 'base64').toString())).toEqual({
        hint: 'weather',
      });
    }
  });

  it('refuses to start with no token, or a short one', () => {
    expect(() => createCodecServer({ codec, corsOrigins: DEFAULT_UI_ORIGINS, token: '' })).toThrow(/token/);
  });

  it('decodes what the workers encrypted and encodes what it is given, under any path prefix', async () => {
    const secret = { hint: 'mention the weather explicitly' };
    const sealed = await codec.encode([defaultPayloadConverter.toPayload(secret)]);
    for (const prefix of ['', '/default', '/a/b']) {
      const response = await post(`${prefix}/decode`, { payloads: sealed.map(toJson) });
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe(UI);
      const { payloads } = (await response.json()) as {
        payloads: { metadata: Record<string, string>; data: string }[];
      };
      expect(Buffer.from(payloads[0]?.metadata.encoding ?? '', 'base64').toString()).toBe('json/plain');
      expect(JSON.parse(Buffer.from(payloads[0]?.data ?? '', 'base64').toString())).toEqual(secret);
    }
    const encoded = await post('/encode', { payloads: [toJson(defaultPayloadConverter.toPayload('x'))] });
    const { payloads } = (await encoded.json()) as { payloads: { metadata: Record<string, string> }[] };
    expect(Buffer.from(payloads[0]?.metadata.encoding ?? '', 'base64').toString()).toBe('binary/encrypted');
  });

  it('refuses a malformed body, a payload it cannot decrypt and an unknown operation', async () => {
    expect((await post('/decode', { nope: true })).status).toBe(400);
    expect((await post('/decode', { payloads: [{ data: 'not base64!' }] })).status).toBe(400);
    const other = new AesGcmPayloadCodec({ currentId: 'k2', keys: new Map([['k2', newPayloadKey()]]) });
    const foreign = await other.encode([defaultPayloadConverter.toPayload('x')]);
    const refused = await post('/decode', { payloads: foreign.map(toJson) });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toMatch(
      /key "k2", which is not in this key ring/,
    );
    expect((await post('/transcode', { payloads: [] })).status).toBe(404);
  });
});
