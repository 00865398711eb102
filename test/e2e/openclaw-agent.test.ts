import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopedSessionId, splitSessionId } from '../../core/tenant.js';
import { exclusionKey, sampleKey, sessionTurnsPrefix, type TurnRecord } from '../../core/turn-record.js';
import { apiKeyName } from '../../gateway/auth.js';
import { sessionDoneRequest } from '../../openclaw-plugin/index.js';
import type { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import type { CliProcess } from '../support/cli-process.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import {
  createOpenClawHome,
  expectExactIds,
  OPENCLAW_PLUGIN_DIR,
  type OpenClawHome,
  requireOpenClaw,
} from '../support/openclaw-agent.js';
import { startDevStack } from '../support/openclaw-dev-stack.js';
import { connectTestClient } from '../support/temporal.js';
import { waitFor } from '../support/wait-for.js';

// A new user's path, end to end: `openclaw-rl dev` on its default model, and the real OpenClaw agent (npm
// `openclaw`, installed by scripts/openclaw-setup.sh) pointed at its gateway, once without the plugin and once
// with it. The judge is the fake one (a random tiny model cannot judge); everything else is the real thing.

const API_KEY = 'openclaw-e2e-key';
/** A key listed without a tenant is a tenant of its own, named after it. */
const TENANT = apiKeyName(API_KEY);
// Two samples train a version: the plain conversation's first two turns (their next states thank the agent).
// The plugin's turns all send a named tool_choice, so they are recorded as constrained and excluded.
const BATCH = 2;

describe('the real OpenClaw agent against openclaw-rl dev', () => {
  let dir: string;
  let judge: FakeJudge;
  let dev: CliProcess;
  let store: FileSampleStore;
  let engineUrl: string;
  let gatewayUrl: string;
  let temporalAddress: string;
  let plain: OpenClawHome;
  let withPlugin: OpenClawHome;
  const timings: { label: string; ms: number }[] = [];
  /** When the plain conversation's third turn ended: its first two turns are the batch that trains. */
  let batchCompleteAt: number | undefined;

  beforeAll(async () => {
    requireOpenClaw();
    dir = await mkdtemp(join(tmpdir(), 'openclaw-e2e-'));
    judge = await startFakeJudge();
    const stack = await startDevStack(dir, { judgeUrl: judge.url, apiKey: API_KEY, batchSize: BATCH });
    ({ dev, engineUrl, gatewayUrl, store, temporalAddress } = stack);
    await stack.ready();

    plain = await createOpenClawHome(join(dir, 'plain'), { baseUrl: gatewayUrl, apiKey: API_KEY });
    withPlugin = await createOpenClawHome(join(dir, 'plugin'), { baseUrl: gatewayUrl, apiKey: API_KEY });
    // The documented install command (docs/openclaw.md), then the plugin's settings.
    await withPlugin.cli(['plugins', 'install', '--force', '--accept-capabilities', OPENCLAW_PLUGIN_DIR]);
    await withPlugin.configure({
      plugins: { entries: { 'openclaw-rl': { hooks: { allowConversationAccess: true } } } },
      // The tool-call session: every user turn's first model call is a call to `ls` (the reference engine
      // forces a named tool_choice once per user turn), whose result OpenClaw sends back in its second call.
      agents: {
        defaults: {
          models: {
            'openclaw-rl/default': {
              params: { extra_body: { tool_choice: { type: 'function', function: { name: 'ls' } } } },
            },
          },
        },
      },
    });
  }, 600_000);

  afterAll(async () => {
    if (timings.length)
      console.log(
        `OpenClaw turns (agent run, ms, load ${loadavg()[0]?.toFixed(1)}): ${timings
          .map((t) => `${t.label} ${t.ms}`)
          .join(', ')}`,
      );
    await dev?.stop(30_000);
    await judge?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The turns of a session, by the id its client knows (the gateway scopes it by the key's tenant). */
  async function turnsOf(sessionId: string): Promise<TurnRecord[]> {
    await store.journaledWritten(); // the gateway journals a turn, its files follow the answer
    const keys = await store.list(sessionTurnsPrefix(scopedSessionId(TENANT, sessionId)));
    const records = await Promise.all(keys.map((key) => store.get<TurnRecord>(key)));
    return records.filter((r): r is TurnRecord => r !== undefined).sort((a, b) => a.turn - b.turn);
  }

  async function sessionsNow(): Promise<Set<string>> {
    await store.journaledWritten(); // the gateway journals a turn, its files follow the answer
    const keys = await store.list('turns/');
    return new Set(keys.map((key) => splitSessionId(decodeURIComponent(key.split('/')[1] ?? '')).id));
  }

  /** The samples, the exclusions with their reasons and the judge's calls, for a failure's message. */
  async function trainingState(): Promise<string> {
    await store.journaledWritten();
    const samples = await store.list('samples/');
    const exclusions = await Promise.all(
      (await store.list('exclusions/')).map(async (key) => {
        const record = await store.get<{ reason?: string; detail?: string }>(key);
        return `${decodeURIComponent(key)}: ${record?.reason} (${record?.detail})`;
      }),
    );
    // The training runs as the dashboard shows them (pending samples, steps, exclusions by reason).
    const dashboard = gatewayUrl.replace(/\/v1$/, '/dashboard/api/runs');
    const headers = { authorization: `Bearer ${API_KEY}` };
    const runs = await fetch(dashboard, { headers })
      .then((r) => r.json() as Promise<{ data: { runId: string }[] }>)
      .then(({ data }) =>
        Promise.all(
          data.map(async ({ runId }) => {
            const view = (await (await fetch(`${dashboard}/${runId}`, { headers })).json()) as object;
            return JSON.stringify({ ...view, versions: undefined });
          }),
        ),
      )
      .catch((error: Error) => [`the dashboard did not answer: ${error.message}`]);
    // The training workflow's activities under way: a trainer call failing again and again shows here.
    const activities = await connectTestClient(temporalAddress)
      .then(async ({ client, connection }) => {
        try {
          const { raw } = await client.workflow.getHandle(trainingWorkflowId('default')).describe();
          return (raw.pendingActivities ?? []).map(
            (a) => `${a.activityType?.name} attempt ${a.attempt}: ${a.lastFailure?.message ?? 'no failure'}`,
          );
        } finally {
          await connection.close();
        }
      })
      .catch((error: Error) => [`the training workflow could not be described: ${error.message}`]);
    return [
      `training activities under way: ${activities.join('; ') || 'none'}`,
      `judge calls ${judge.calls}; samples: ${samples.map((key) => decodeURIComponent(key)).join(', ') || 'none'}`,
      `exclusions: ${exclusions.join('; ') || 'none'}`,
      ...runs,
    ].join('\n');
  }

  async function timed(label: string, home: OpenClawHome, sessionId: string, message: string) {
    const run = await home.agent(sessionId, message);
    timings.push({ label, ms: run.meta.durationMs });
    expect(run.meta.agentMeta.sessionId).toBe(sessionId);
    return run;
  }

  it('without the plugin: three turns captured under one stable derived session id', async () => {
    // A new OpenClaw home's first run lists fewer tools in its system prompt than later runs (bundled plugins
    // load on first use): the derived id leaves the system prompt out, so the fresh home's first conversation
    // is one session too.
    const before = await sessionsNow();
    await timed('plain 1', plain, 'plain-1', 'Hello! Can you help me plan a trip?');
    await timed('plain 2', plain, 'plain-1', 'thanks, that helps. What should I pack?');
    await timed('plain 3', plain, 'plain-1', 'thanks! One more: what about the weather?');
    batchCompleteAt = Date.now();
    const derived = [...(await sessionsNow())].filter((s) => !before.has(s));
    // OpenClaw's own session id never reaches the gateway without the plugin; the gateway derives one.
    expect(derived).toHaveLength(1);
    const [session] = derived as [string];
    expect(session).not.toContain('plain-1');
    const turns = await turnsOf(session);
    expect(turns.map((t) => t.turn)).toEqual([1, 2, 3]);
    for (const turn of turns) await expectExactIds(engineUrl, turn);
    // Each turn carries the whole conversation so far (OpenClaw adds a user-role context message to each call).
    expect(turns.map((t) => t.messages.filter((m) => m.role === 'assistant').length)).toEqual([0, 1, 2]);
  }, 900_000);

  it('with the plugin: OpenClaw session id, a tool call per user turn, all captured with exact ids', async () => {
    await timed('plugin 1', withPlugin, 'plugin-1', 'Hi, please list my workspace files.');
    await timed('plugin 2', withPlugin, 'plugin-1', 'thanks, now list them again please.');
    await timed('plugin 3', withPlugin, 'plugin-1', 'thanks, great. Once more?');
    const turns = await turnsOf('plugin-1');
    // Each user turn is two model calls: the forced `ls` call, then a reply that sees the tool's result.
    expect(turns.map((t) => t.turn)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const [index, turn] of turns.entries()) {
      await expectExactIds(engineUrl, turn, 'ls');
      if (index % 2 === 0) {
        const calls = turn.response.toolCalls as { function: { name: string } }[] | null;
        expect(calls?.map((c) => c.function.name)).toEqual(['ls']);
      } else {
        // What follows the forced call in this request: the tool's result (OpenClaw's context message after it).
        const lastCall = turn.messages.map((m) => m.role).lastIndexOf('assistant');
        expect(turn.messages[lastCall + 1]?.role).toBe('tool');
      }
    }
    // The plugin's X-Session-Done request (sent on /new, /reset, ...) closes the session: its last turn settles.
    const provider = { baseUrl: gatewayUrl, apiKey: API_KEY, models: [{ id: 'default' }] };
    const done = sessionDoneRequest(provider, 'plugin-1');
    if (!done) throw new Error('no session-done request');
    const response = await fetch(done.url, done.init);
    expect(response.status).toBe(200);
    const last = turns.at(-1) as TurnRecord;
    await waitFor(
      async () =>
        (await store.get(sampleKey(last.sampleId))) !== undefined ||
        (await store.get(exclusionKey(last.sampleId))) !== undefined,
      180_000,
      `the last turn ${last.sampleId} is settled after X-Session-Done`,
    );
    // The session-done request itself is a side turn: served, never recorded.
    expect((await turnsOf('plugin-1')).length).toBe(6);
  }, 900_000);

  it('side turns are served and never recorded or trained', async () => {
    // OpenClaw's `openclaw agent` runs are user-triggered; the plugin's sideTriggers setting marks them side
    // here, so the real agent's calls arrive with `X-Turn-Type: side` as heartbeats and memory flushes do.
    await withPlugin.configure({
      plugins: { entries: { 'openclaw-rl': { config: { sideTriggers: ['user'] } } } },
    });
    const run = await timed('side', withPlugin, 'side-1', 'A side question.');
    expect(run.payloads.length).toBeGreaterThan(0);
    expect(await turnsOf('side-1')).toEqual([]);
    expect((await store.list('samples/')).filter((key) => key.includes('side-1'))).toEqual([]);
    await withPlugin.configure({
      plugins: {
        entries: { 'openclaw-rl': { config: { sideTriggers: ['heartbeat', 'memory', 'overflow'] } } },
      },
    });
  }, 600_000);

  it('the judged turns train an epoch and the next turn is served by the new version', async () => {
    const modelInfo = async () =>
      (await (await fetch(`${engineUrl}/model_info`)).json()) as { weight_version: string | number };
    // The step trains on two turns that each hold OpenClaw's whole prompt (tens of thousands of tokens) while
    // the plugin's turns are served: a minute on a quiet machine, several while the other lane of the suite
    // loads both cores.
    await waitFor(
      async () => Number((await modelInfo()).weight_version) >= 1,
      600_000,
      'policy version 1',
    ).catch(async (error: Error) => {
      // What a failure needs to be understood after the run: what was scored, excluded and why, and dev's output.
      throw new Error(`${error.message}\n${await trainingState()}\n${dev.tail(120)}`);
    });
    if (batchCompleteAt !== undefined)
      timings.push({ label: 'version 1 seen, from the batch complete', ms: Date.now() - batchCompleteAt });
    expect(judge.calls).toBeGreaterThan(0);
    const samples = await store.list('samples/');
    expect(samples.length).toBeGreaterThanOrEqual(BATCH);
    await timed('plugin 4 (after training)', withPlugin, 'plugin-2', 'thanks for everything so far.');
    const [turn] = await turnsOf('plugin-2');
    expect(turn?.policyVersion).toBeGreaterThanOrEqual(1);
  }, 900_000);
});
