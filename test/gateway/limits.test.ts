// Keys on by default and per-key limits: the gateway refuses to listen beyond loopback without a key (unless
// told to), reads keys from the keys file `keys init` writes, and answers a key over its per-minute budget
// with OpenAI's 429 (`rate_limit_exceeded`, `retry-after`), which the OpenAI SDK raises as RateLimitError.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { RateLimitError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type OpenClawConfigInput } from '../../core/config.js';
import { startGateway } from '../../gateway/main.js';
import {
  apiKeysFile,
  configuredApiKeys,
  ensureApiKeysFile,
  parseApiKeysFile,
} from '../../security/api-keys.js';
import { isLoopbackHost } from '../../security/loopback-host.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { freePort, startTestGateway, type TestGateway } from './gateway-fixture.js';

describe('per-key rate limit', () => {
  let env: TestWorkflowEnvironment;
  let gateway: TestGateway;
  const LIMIT = 3;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    gateway = await startTestGateway({
      // Nothing listens there: every counted request is a 502, which spends the budget like any other.
      engineUrl: `http://127.0.0.1:${await freePort()}`,
      client: env.client,
      apiKeys: ['key-a', 'key-b'],
      rateLimitPerMinute: LIMIT,
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.teardown();
  });

  const models = (key?: string) =>
    fetch(`${gateway.url}/v1/models`, { headers: key ? { authorization: `Bearer ${key}` } : {} });

  it('answers the request over the budget with an OpenAI 429 and retry-after', async () => {
    for (let i = 0; i < LIMIT; i++) expect((await models('key-a')).status).toBe(502);
    const limited = await models('key-a');
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers.get('x-ratelimit-limit')).toBe(String(LIMIT));
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(await limited.json()).toEqual({
      error: {
        message: `Rate limit reached: ${LIMIT} requests per minute for this API key. Please try again in ${retryAfter}s.`,
        type: 'requests',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
    const error = await gateway
      .openai('key-a')
      .chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
  });

  it('keeps each key to its own budget, and never limits health, metrics or unauthenticated requests', async () => {
    expect((await models('key-b')).status).toBe(502);
    for (let i = 0; i < 2 * LIMIT; i++) expect((await models('not-a-key')).status).toBe(401);
    expect((await models('key-b')).status).toBe(502);
    for (let i = 0; i < 2 * LIMIT; i++) {
      expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${gateway.url}/metrics`)).status).toBe(200);
    }
  });
});

describe('keys on by default', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gateway-keys-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const configFor = async (name: string, gateway: NonNullable<OpenClawConfigInput['gateway']>) => {
    const loaded = loadConfig(
      {},
      {
        dataDir: join(dir, name),
        gateway: { port: await freePort(), ...gateway },
        engine: { url: `http://127.0.0.1:${await freePort()}` },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    return loaded.config;
  };

  it('tells loopback addresses from the others', () => {
    for (const host of ['127.0.0.1', '127.5.0.1', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1'])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of [
      '0.0.0.0',
      '::',
      '192.168.1.10',
      '10.0.0.1',
      'gateway.example.com',
      '::ffff:10.0.0.1',
    ])
      expect(isLoopbackHost(host), host).toBe(false);
  });

  it('refuses to listen beyond loopback without a key, before connecting to anything', async () => {
    const config = await configFor('open', { host: '0.0.0.0' });
    await expect(startGateway(config, { logger: false })).rejects.toThrow(
      /would listen on 0\.0\.0\.0 without an API key.*openclaw-rl keys init.*--allow-no-keys/,
    );
  });

  it('listens open beyond loopback when told to, and on loopback without being told', async () => {
    for (const gateway of [{ host: '0.0.0.0', allowNoKeys: true }, { host: '127.0.0.1' }]) {
      const config = await configFor('allowed', gateway);
      const running = await startGateway(config, { logger: false, recorder: noRecorder });
      try {
        expect((await fetch(`${running.url}/v1/models`)).status).toBe(502);
      } finally {
        await running.close();
      }
    }
  });

  it('reads the keys file `keys init` writes and then asks for one of its keys', async () => {
    const config = await configFor('with-file', { host: '0.0.0.0' });
    const file = apiKeysFile(config);
    expect(file).toBe(join(dir, 'with-file', 'keys', 'api-keys'));
    expect(await ensureApiKeysFile(file)).toEqual({ created: true });
    expect(await ensureApiKeysFile(file)).toEqual({ created: false });
    const key = configuredApiKeys(config).keys[0]?.key;
    expect(key).toMatch(/^ocrl-[A-Za-z0-9_-]{43}$/);
    const running = await startGateway(config, { logger: false, recorder: noRecorder });
    try {
      expect((await fetch(`${running.url}/v1/models`)).status).toBe(401);
      const authorized = await fetch(`${running.url}/v1/models`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(authorized.status).toBe(502);
    } finally {
      await running.close();
    }
  });

  it('parses keys files with comments and refuses a named file that is missing or empty', async () => {
    expect(parseApiKeysFile('# keys\nk1\n  k2  # laptop\n\n#k3\nk4 alice # hers\n')).toEqual([
      { key: 'k1' },
      { key: 'k2' },
      { key: 'k4', tenant: 'alice' },
    ]);
    expect(() => parseApiKeysFile('k1\nk2 alice extra\n')).toThrow(/line 2: a line is a key and/);
    expect(() => parseApiKeysFile('k1 ../bob\n')).toThrow(/line 1: a tenant name/);
    const missing = await configFor('missing', { apiKeysFile: join(dir, 'nope') });
    expect(() => configuredApiKeys(missing)).toThrow(/OPENCLAW_API_KEYS_FILE.*nope/);
    await writeFile(join(dir, 'empty-keys'), '# nothing yet\n');
    const empty = await configFor('empty', { apiKeysFile: join(dir, 'empty-keys'), apiKeys: ['listed'] });
    expect(() => configuredApiKeys(empty)).toThrow(/holds no key/);
  });
});

/** startGateway without Temporal: these tests never record a turn. */
const noRecorder = {
  record: () => Promise.reject(new Error('no recording in this test')),
  endSession: () => Promise.resolve(),
};
