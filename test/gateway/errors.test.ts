// Every way a request can fail, each answered with OpenAI's error JSON and the right status: bad input and
// auth before the engine is involved, then an engine that is down, unavailable, refusing, or broken
// mid-stream (a small stand-in server plays the engine's failures, which a healthy engine cannot).

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { APIError, AuthenticationError } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { findRecordedTurn, recordedTurns } from '../support/turn-lookup.js';
import {
  freePort,
  startTestGateway,
  type TestGateway,
  terminateSessions,
  uniqueSessionId,
} from './gateway-fixture.js';

const KEY = 'test-key-1';
const BODY_LIMIT = 4096;
const hello = { model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 2 };

describe('gateway errors', () => {
  let env: TestWorkflowEnvironment;
  let closedPort: number;
  let downGateway: TestGateway;
  let fakeEngine: Server;
  let fakeGateway: TestGateway;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    closedPort = await freePort();
    downGateway = await startTestGateway({
      engineUrl: `http://127.0.0.1:${closedPort}`,
      client: env.client,
      apiKeys: [KEY, 'test-key-2'],
      bodyLimitBytes: BODY_LIMIT,
    });
    fakeEngine = createServer(failingEngine);
    await new Promise<void>((done) => fakeEngine.listen(0, '127.0.0.1', done));
    const port = (fakeEngine.address() as AddressInfo).port;
    fakeGateway = await startTestGateway({ engineUrl: `http://127.0.0.1:${port}`, client: env.client });
  });

  afterAll(async () => {
    await downGateway?.close();
    await fakeGateway?.close();
    await new Promise((done) => fakeEngine?.close(done));
    await env?.teardown();
  });

  async function post(gateway: TestGateway, body: string, headers: Record<string, string> = {}) {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...headers },
      body,
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  async function errorOf(body: unknown) {
    const response = await post(downGateway, JSON.stringify(body));
    return { status: response.status, ...(JSON.parse(response.text) as { error: Record<string, unknown> }) };
  }

  it('asks for a bearer key, except on /healthz and /metrics', async () => {
    for (const apiKey of ['wrong-key', '']) {
      const error = await downGateway
        .openai(apiKey)
        .chat.completions.create(hello as ChatCompletionCreateParamsNonStreaming)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthenticationError);
      expect((error as APIError).status).toBe(401);
    }
    const missing = await fetch(`${downGateway.url}/v1/models`);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({
      error: {
        message: 'missing bearer token',
        type: 'authentication_error',
        param: null,
        code: 'invalid_api_key',
      },
    });

    const health = await fetch(`${downGateway.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ ok: true, engine: { reachable: false } });
    expect((await fetch(`${downGateway.url}/metrics`)).status).toBe(200);
  });

  it('rejects malformed JSON, an empty body and other content types', async () => {
    const malformed = await post(downGateway, '{"messages": [');
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.text)).toMatchObject({
      error: { type: 'invalid_request_error', param: 'body', code: 'invalid_json' },
    });
    expect((await post(downGateway, '')).status).toBe(400);
    const text = await post(downGateway, 'hello', { 'content-type': 'text/plain' });
    expect(text.status).toBe(400);
    expect(JSON.parse(text.text)).toMatchObject({ error: { param: 'body' } });
    const xml = await post(downGateway, '<messages/>', { 'content-type': 'application/xml' });
    expect(xml.status).toBe(415);
    expect(JSON.parse(xml.text)).toMatchObject({ error: { code: 'unsupported_media_type' } });
  });

  it('names the offending field of a request that breaks the schema', async () => {
    const cases: [unknown, string][] = [
      [{ messages: [] }, 'messages'],
      [{ model: 'tiny' }, 'messages'],
      [{ messages: [{ role: 'robot', content: 'hi' }] }, 'messages[0].role'],
      [
        {
          messages: [
            { role: 'user', content: 'a' },
            { role: 'user', content: 42 },
          ],
        },
        'messages[1].content',
      ],
      [{ ...hello, temperature: 3 }, 'temperature'],
      [{ ...hello, n: 2 }, 'n'],
      [{ ...hello, max_tokens: 0 }, 'max_tokens'],
      [{ ...hello, tools: { type: 'function' } }, 'tools'],
      [{ ...hello, tools: [{ type: 'function', function: {} }] }, 'tools[0].function.name'],
      [{ ...hello, top_logprobs: 2 }, 'top_logprobs'],
      [{ ...hello, stream: 'yes' }, 'stream'],
      [[hello], 'body'],
    ];
    for (const [body, param] of cases) {
      const error = await errorOf(body);
      expect(error.status, JSON.stringify(body)).toBe(400);
      expect(error.error, JSON.stringify(body)).toMatchObject({ type: 'invalid_request_error', param });
      expect(error.error.message).toContain(param);
    }
    expect((await errorOf({ messages: [] })).error.message).toBe(
      'messages: messages must be a non-empty list',
    );
  });

  it('answers 413 for a body over the limit', async () => {
    const big = JSON.stringify({ ...hello, messages: [{ role: 'user', content: 'x'.repeat(BODY_LIMIT) }] });
    const response = await post(downGateway, big);
    expect(response.status).toBe(413);
    expect(JSON.parse(response.text)).toMatchObject({
      error: { type: 'invalid_request_error', code: 'request_too_large', param: 'body' },
    });
  });

  it('answers 502 with retry-after when the engine is down, streaming or not', async () => {
    for (const stream of [false, true]) {
      const error = await downGateway
        .openai(KEY)
        .chat.completions.create({ ...hello, stream } as ChatCompletionCreateParamsNonStreaming)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(APIError);
      expect((error as APIError).status).toBe(502);
      expect((error as APIError).headers?.get('retry-after')).toBe('5');
      expect((error as APIError).message).toContain('unreachable');
    }
    const models = await downGateway
      .openai(KEY)
      .models.list()
      .catch((e: unknown) => e);
    expect((models as APIError).status).toBe(502);
  });

  it('answers 404 in OpenAI shape for unknown routes', async () => {
    const response = await fetch(`${downGateway.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { type: 'not_found_error' } });
  });

  it("passes the engine's 503 on with its retry-after, and turns its 500 into 502", async () => {
    const unavailable = await post(fakeGateway, JSON.stringify(scenario('unavailable')));
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('retry-after')).toBe('7');
    expect(JSON.parse(unavailable.text)).toMatchObject({ error: { code: 'engine_unavailable' } });

    const broken = await post(fakeGateway, JSON.stringify(scenario('crash')));
    expect(broken.status).toBe(502);
    expect(JSON.parse(broken.text)).toMatchObject({
      error: { code: 'upstream_failed', message: 'the policy engine failed (HTTP 500): CUDA out of memory' },
    });
    expect(broken.headers.get('retry-after')).toBe('5');

    const refused = await post(fakeGateway, JSON.stringify(scenario('refuse')));
    expect(refused.status).toBe(422);
    expect(JSON.parse(refused.text)).toMatchObject({
      error: { message: 'the prompt is too long', param: 'messages' },
    });
  });

  it('asks the engine for its weight version when a response carries none', async () => {
    const sessionId = uniqueSessionId('version');
    const response = await post(fakeGateway, JSON.stringify(scenario('no-version')), {
      'x-session-id': sessionId,
    });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.text)).toMatchObject({ session_id: sessionId, choices: [{ logprobs: null }] });
    expect(
      await findRecordedTurn(fakeGateway.store, scopedSessionId(LOCAL_TENANT, sessionId), 1),
    ).toMatchObject({
      policyVersion: 7,
      promptIds: [1, 2],
      responseIds: [3],
      responseLogProbs: [-0.25],
    });
    await terminateSessions(env, [scopedSessionId(LOCAL_TENANT, sessionId)]);
  });

  it('ends a stream with an error event and no [DONE] when the engine stream breaks or lacks tokens', async () => {
    const codes: Record<string, string> = {
      truncated: 'upstream_failed',
      'no-token-ids': 'engine_missing_tokens',
      'engine-error': '500',
    };
    for (const [name, code] of Object.entries(codes)) {
      const sessionId = uniqueSessionId(name);
      const response = await post(fakeGateway, JSON.stringify({ ...scenario(name), stream: true }), {
        'x-session-id': sessionId,
      });
      expect(response.status).toBe(200);
      expect(response.text, name).toContain('data: {"error":');
      expect(response.text, name).toMatch(new RegExp(`"code":"?${code}"?`));
      expect(response.text, name).not.toContain('[DONE]');
      // The content that did come was relayed before the failure.
      expect(response.text, name).toContain('"content":"Hel"');
      expect(await recordedTurns(fakeGateway.store, scopedSessionId(LOCAL_TENANT, sessionId))).toEqual([]);
    }
  });
});

function scenario(name: string) {
  return { model: 'tiny', messages: [{ role: 'user', content: name }], max_tokens: 2 };
}

/** Plays the engine's failures; which one is chosen by the first message's content. */
function failingEngine(request: IncomingMessage, response: ServerResponse): void {
  let raw = '';
  request.on('data', (chunk: Buffer) => {
    raw += chunk.toString();
  });
  request.on('end', () => {
    if (request.url === '/model_info') {
      response.writeHead(200, { 'content-type': 'application/json' });
      return void response.end(JSON.stringify({ model_path: 'tiny', weight_version: 'step-7' }));
    }
    const body = JSON.parse(raw || '{}') as { messages?: { content?: string }[] };
    const name = body.messages?.[0]?.content;
    const json = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      response.writeHead(status, { 'content-type': 'application/json', ...headers });
      response.end(JSON.stringify(payload));
    };
    const chunk = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
    const first = chunk({
      id: 'x',
      object: 'chat.completion.chunk',
      model: 'tiny',
      choices: [
        { index: 0, delta: { role: 'assistant', content: 'Hel' }, prompt_token_ids: [1, 2], token_ids: [3] },
      ],
    });
    switch (name) {
      case 'no-version':
        // Exact tokens, but no weight version in the response (older SGLang): the gateway asks /model_info.
        return json(200, {
          id: 'x',
          object: 'chat.completion',
          model: 'tiny',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: 'Hi' },
              logprobs: { content: [{ logprob: -0.25 }] },
              finish_reason: 'stop',
              prompt_token_ids: [1, 2],
              token_ids: [3],
            },
          ],
        });
      case 'unavailable':
        return json(
          503,
          { error: { message: 'engine is loading', type: 'server_error' } },
          { 'retry-after': '7' },
        );
      case 'crash':
        return json(500, { detail: 'CUDA out of memory' });
      case 'refuse':
        // SGLang's flat error shape.
        return json(422, {
          object: 'error',
          message: 'the prompt is too long',
          type: 'BadRequest',
          param: 'messages',
          code: 422,
        });
      case 'truncated':
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(first);
        return void response.end(); // no [DONE]
      case 'engine-error':
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(first);
        return void response.end(
          `${chunk({ error: { message: 'generation failed', code: 500 } })}data: [DONE]\n\n`,
        );
      case 'no-token-ids':
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        return void response.end(
          `${chunk({ model: 'tiny', choices: [{ index: 0, delta: { content: 'Hel' } }] })}${chunk({
            model: 'tiny',
            choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
          })}data: [DONE]\n\n`,
        );
      default:
        return json(404, { error: { message: `no scenario ${name}` } });
    }
  });
}
