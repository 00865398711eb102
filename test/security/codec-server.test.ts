// The codec server speaks Temporal's remote codec protocol (Payloads as protobuf JSON at …/encode and
// …/decode) and answers the Temporal UI's CORS preflight. What the UI sends is read from its own source
// (temporalio/ui src/lib/services/data-encoder.ts): POST `${endpoint}/decode` with `Content-Type:
// application/json` and `X-Namespace`, `Authorization` when it passes an access token, and `credentials:
// 'include'` when configured to, so a preflight asks for those headers from the UI's origin.

import type { AddressInfo } from 'node:net';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCodecServer, DEFAULT_UI_ORIGINS } from '../../security/codec-server.js';
import { AesGcmPayloadCodec } from '../../security/payload-codec.js';
import { newPayloadKey } from '../../security/payload-keys.js';

const UI = 'http://localhost:8233';
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
    app = createCodecServer({ codec, corsOrigins: DEFAULT_UI_ORIGINS });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app?.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: UI, ...headers },
      body: JSON.stringify(body),
    });

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

  it('gives other origins no CORS grant (a browser page elsewhere cannot read the answer)', async () => {
    const preflight = await fetch(`${url}/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const response = await post('/decode', { payloads: [] }, { origin: 'http://evil.example' });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
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
