// The parts a dashboard test reads from, all real: the policy engine as `openclaw-rl engine` starts it (the
// reference engine with its trainer), the real gateway with two tenants' keys, the run's Temporal server and a
// control worker, on a run of batch size 1 whose versions come from people's ratings (no judge can vote here).

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import { type LaunchedEngine, launchEngine } from '../../cli/engine-launch.js';
import { loadConfig, type OpenClawConfig, type OpenClawConfigInput } from '../../core/config.js';
import { type ControlStack, startControlStack } from './control-stack.js';
import { freePortPair } from './free-port.js';
import { connectTestEnvironment, uniqueTaskQueue } from './temporal.js';

export const DASHBOARD_KEYS = {
  alice: 'dash-key-of-alice-0123456789',
  bob: 'dash-key-of-bob-0123456789',
} as const;
export type DashboardTenant = keyof typeof DASHBOARD_KEYS;

export interface DashboardFixture {
  env: TestWorkflowEnvironment;
  config: OpenClawConfig;
  stack: ControlStack;
  /** One main turn of `tenant` in `session` (unique to this run), then its rating: a version of its run. */
  rateTurn(tenant: DashboardTenant, session: string, content: string, rating: number): Promise<string>;
  /** GET on the gateway with `tenant`'s key (none: no authorization header). */
  get(path: string, tenant?: DashboardTenant | 'nobody'): Promise<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

export async function startDashboardFixture(
  tag: string,
  // A publish gate (training.gate) for the run, when a test reads its verdicts.
  options: { adapters?: string[]; gate?: NonNullable<OpenClawConfigInput['training']>['gate'] } = {},
): Promise<DashboardFixture> {
  const env = await connectTestEnvironment();
  const dir = await mkdtemp(join(tmpdir(), `${tag}-`));
  await mkdir(join(dir, 'keys'), { recursive: true });
  await writeFile(
    join(dir, 'keys', 'api-keys'),
    `${DASHBOARD_KEYS.alice} alice\n${DASHBOARD_KEYS.bob} bob\n`,
    { mode: 0o600 },
  );
  const taskQueue = uniqueTaskQueue(tag);
  const port = await freePortPair(1);
  const loaded = loadConfig(
    {},
    {
      // A run id of its own: the test files share one Temporal server.
      runId: `${tag}-${taskQueue}`.slice(0, 64),
      method: 'rl',
      dataDir: dir,
      engine: { kind: 'reference', url: `http://127.0.0.1:${port}` },
      judge: { baseUrl: `http://127.0.0.1:${port}/v1`, model: 'tiny', votes: 1, maxTokens: 8 },
      training: { batchSize: 1, learningRate: 1e-3, ...(options.gate && { gate: options.gate }) },
      ...(options.adapters && { adapters: { tenants: options.adapters, rank: 4, maxLoaded: 4 } }),
      gateway: { port: 0 },
      temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
    },
  );
  if (!loaded.ok) throw new Error(loaded.error);
  const config = loaded.config;
  let engine: LaunchedEngine | null = null;
  let stack: ControlStack | null = null;
  const close = async () => {
    await stack?.close();
    for (const process of [...(engine?.processes ?? [])].reverse()) await process.stop();
    await env.teardown();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    engine = await launchEngine(config);
    stack = await startControlStack(config, env);
  } catch (error) {
    await close();
    throw error;
  }
  const running = stack;
  const url = running.gateway.url;
  return {
    env,
    config,
    stack: running,
    async rateTurn(tenant, session, content, rating) {
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: DASHBOARD_KEYS[tenant], maxRetries: 0 });
      const response = (await client.chat.completions.create(
        { model: 'tiny', messages: [{ role: 'user', content }], max_tokens: 6 },
        { headers: { 'X-Session-Id': session } },
      )) as OpenAI.Chat.ChatCompletion & { turn_id?: string };
      const answer = await fetch(`${url}/v1/feedback`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${DASHBOARD_KEYS[tenant]}` },
        body: JSON.stringify({ turn_id: response.turn_id, rating }),
      });
      if (answer.status !== 200) throw new Error(`feedback refused: ${answer.status} ${await answer.text()}`);
      return String(response.turn_id);
    },
    async get(path, tenant) {
      const headers: Record<string, string> =
        tenant === undefined || tenant === 'nobody'
          ? {}
          : { authorization: `Bearer ${DASHBOARD_KEYS[tenant]}` };
      const response = await fetch(`${url}${path}`, { headers });
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Not JSON: the page or a script.
      }
      return { status: response.status, body };
    },
    close,
  };
}
