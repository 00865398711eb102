// startGateway as the CLI calls it: from the project configuration, connecting to Temporal itself.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../core/config.js';
import { type RunningGateway, sampleStoreRoot, startGateway } from '../../gateway/main.js';
import { freePort } from './gateway-fixture.js';

describe('startGateway', () => {
  let dir: string;
  let gateway: RunningGateway;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'openclaw-start-gateway-'));
    const [port, enginePort] = [await freePort(), await freePort()];
    const loaded = loadConfig(
      { OPENCLAW_API_KEYS: 'k1,k2' },
      { dataDir: dir, gateway: { port }, engine: { url: `http://127.0.0.1:${enginePort}` } },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    expect(sampleStoreRoot(loaded.config)).toBe(join(dir, 'store'));
    gateway = await startGateway(loaded.config, {
      temporalAddress: inject('temporalAddress'),
      temporalNamespace: inject('temporalNamespace'),
      logger: false,
    });
    expect(gateway.url).toBe(`http://127.0.0.1:${port}`);
  });

  afterAll(async () => {
    await gateway?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves with the configured keys and engine', async () => {
    expect(await (await fetch(`${gateway.url}/healthz`)).json()).toMatchObject({
      ok: true,
      engine: { reachable: false },
    });
    const chat = (key: string) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
      });
    expect((await chat('nope')).status).toBe(401);
    expect((await chat('k2')).status).toBe(502);
    // Process metrics are on for a real gateway.
    expect(await (await fetch(`${gateway.url}/metrics`)).text()).toContain('process_cpu_user_seconds_total');
  });
});

describe('startGateway beyond loopback', () => {
  it('tells a caller without a key only that it is up, and keeps /metrics behind the key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'openclaw-wide-gateway-'));
    const [port, enginePort] = [await freePort(), await freePort()];
    const engineUrl = `http://127.0.0.1:${enginePort}`;
    const loaded = loadConfig(
      { OPENCLAW_API_KEYS: 'k1' },
      { dataDir: dir, gateway: { port, host: '0.0.0.0' }, engine: { url: engineUrl } },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    const gateway = await startGateway(loaded.config, {
      temporalAddress: inject('temporalAddress'),
      temporalNamespace: inject('temporalNamespace'),
      logger: false,
    });
    const get = (path: string, key?: string) =>
      fetch(`${gateway.url}${path}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
    try {
      const anonymous = await get('/healthz');
      expect(anonymous.status).toBe(200);
      expect(await anonymous.json()).toEqual({ ok: true, engine: { reachable: false } });
      expect(await (await get('/healthz', 'wrong')).json()).toEqual({
        ok: true,
        engine: { reachable: false },
      });
      expect(await (await get('/healthz', 'k1')).json()).toEqual({
        ok: true,
        engine: { url: engineUrl, kind: 'reference', reachable: false },
      });
      const metrics = await get('/metrics');
      expect(metrics.status).toBe(401);
      expect(await metrics.text()).not.toContain('openclaw_');
      expect((await get('/metrics', 'wrong')).status).toBe(401);
      const keyed = await get('/metrics', 'k1');
      expect(keyed.status).toBe(200);
      expect(await keyed.text()).toMatch(/^openclaw_outbox_depth \d+$/m);
    } finally {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('startGateway without Temporal', () => {
  it('starts and answers while nothing listens at the Temporal address, its outbox on /metrics', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'openclaw-no-temporal-'));
    const [port, temporalPort] = [await freePort(), await freePort()];
    const loaded = loadConfig({}, { dataDir: dir, gateway: { port } });
    if (!loaded.ok) throw new Error(loaded.error);
    const gateway = await startGateway(loaded.config, {
      temporalAddress: `127.0.0.1:${temporalPort}`,
      logger: false,
    });
    try {
      expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
      const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(metrics).toMatch(/^openclaw_outbox_depth 0$/m);
      expect(metrics).toMatch(/^openclaw_outbox_oldest_age_seconds 0$/m);
      expect(metrics).toContain('openclaw_outbox_delivery_lag_seconds_bucket');
    } finally {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
