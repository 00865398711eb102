// A user whose OpenClaw speaks the Responses API (`api: "openai-responses"`, as for OpenAI's own models) points
// it at the gateway: the real agent (npm `openclaw`, scripts/openclaw-setup.sh) sends its turns to
// `POST /v1/responses`, and each must be recorded with the engine's exact ids, continuing the one before.
// What goes wrong otherwise: a field OpenClaw sends refused, events its stream parser cannot read, or turns
// recorded under two sessions.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitSessionId } from '../../core/tenant.js';
import { sessionTurnsPrefix, type TurnRecord } from '../../core/turn-record.js';
import { FileSampleStore } from '../../store/sample-store.js';
import {
  type EngineStack,
  startEngineStack,
  startTestGateway,
  type TestGateway,
} from '../gateway/gateway-fixture.js';
import { createOpenClawHome, expectExactIds, requireOpenClaw } from '../support/openclaw-agent.js';

const API_KEY = 'openclaw-responses-key';
const TENANT = 'openclaw-responses';

describe('the real OpenClaw agent over the Responses API', () => {
  let dir: string;
  let stack: EngineStack;
  let gateway: TestGateway;

  beforeAll(async () => {
    requireOpenClaw();
    dir = await mkdtemp(join(tmpdir(), 'openclaw-responses-'));
    stack = await startEngineStack('openclaw-responses');
    gateway = await startTestGateway({
      engineUrl: stack.engine.url,
      client: stack.env.client,
      apiKeys: [{ key: API_KEY, tenant: TENANT }],
    });
  }, 300_000);

  afterAll(async () => {
    await gateway?.close();
    await stack?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function sessionsOfTenant(): Promise<string[]> {
    if (gateway.store instanceof FileSampleStore) await gateway.store.journaledWritten();
    const keys = await gateway.store.list('turns/');
    const ids = keys.map((key) => decodeURIComponent(key.split('/')[1] ?? ''));
    return [...new Set(ids.filter((id) => splitSessionId(id).tenant === TENANT))];
  }

  async function turnsOf(sessionId: string): Promise<TurnRecord[]> {
    const keys = await gateway.store.list(sessionTurnsPrefix(sessionId));
    const records = await Promise.all(keys.map((key) => gateway.store.get<TurnRecord>(key)));
    return records.filter((r): r is TurnRecord => r !== undefined).sort((a, b) => a.turn - b.turn);
  }

  it('records its turns through /v1/responses with exact ids, the second continuing the first', async () => {
    const home = await createOpenClawHome(join(dir, 'home'), {
      baseUrl: `${gateway.url}/v1`,
      apiKey: API_KEY,
    });
    await home.configure({ models: { providers: { 'openclaw-rl': { api: 'openai-responses' } } } });
    const first = await home.agent('responses-1', 'Hello! Can you help me plan a trip?');
    expect(first.payloads.length).toBeGreaterThan(0);
    await home.agent('responses-1', 'thanks, that helps. What should I pack?');

    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/route="\/v1\/responses",status="200"/);
    expect(metrics).not.toMatch(/route="\/v1\/chat\/completions"/);

    const sessions = await sessionsOfTenant();
    expect(sessions).toHaveLength(1);
    const [session] = sessions as [string];
    for (const id of sessions) stack.sessions.add(id);
    const turns = await turnsOf(session);
    expect(turns.map((turn) => turn.turn)).toEqual([1, 2]);
    for (const turn of turns) await expectExactIds(stack.engine.url, turn);
    expect(turns[1]?.continues?.sampleId).toBe(turns[0]?.sampleId);
  }, 600_000);
});
