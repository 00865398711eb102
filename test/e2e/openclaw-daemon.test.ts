import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scopedSessionId } from '../../core/tenant.js';
import { exclusionKey, sampleKey, type TurnRecord } from '../../core/turn-record.js';
import { apiKeyName } from '../../gateway/auth.js';
import type { FileSampleStore } from '../../store/sample-store.js';
import { sessionWorkflowId } from '../../temporal/workflow-ids.js';
import type { sessionWorkflow } from '../../workflows/session-workflow.js';
import type { CliProcess } from '../support/cli-process.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { type GatewayReading, readGateway } from '../support/gateway-metrics.js';
import {
  expectExactIds,
  type OpenClawHome,
  requireOpenClaw,
  startOpenClawDaemon,
} from '../support/openclaw-agent.js';
import { startDevStack } from '../support/openclaw-dev-stack.js';
import { connectTestClient } from '../support/temporal.js';
import { recordedTurns } from '../support/turn-lookup.js';
import { waitFor } from '../support/wait-for.js';

// The real OpenClaw agent as a user runs it: its own Gateway daemon (`openclaw gateway run`), with the plugin
// installed, in front of `openclaw-rl dev` on its default model. Turns go through the daemon (`openclaw agent`
// without `--local`), so what only the daemon does is real here: heartbeats, `/new`, and a warm agent whose
// turns pay no CLI cold start. The judge is the fake one (a random tiny model cannot judge).

const API_KEY = 'openclaw-daemon-e2e-key';
const SESSION = 'daemon-1';
/** The session as the gateway records it: scoped by the key's tenant (a bare key is its own, named after it). */
const RECORDED = scopedSessionId(apiKeyName(API_KEY), SESSION);

/** `openclaw system heartbeat last --json` (only the fields the test reads). */
const HeartbeatEvent = z.looseObject({
  ts: z.number(),
  status: z.string(),
  durationMs: z.number().optional(),
});

interface TurnTiming {
  label: string;
  /** The `openclaw agent` client process, start to exit (its own Node start included). */
  cliMs: number;
  /** The daemon's run of the turn, as OpenClaw reports it (`durationMs`). */
  runMs: number;
  /** The same turn's model calls as the gateway timed them (request to end of stream), and how many. */
  gatewayMs: number;
  /** Of `gatewayMs`, the time to the first token (queue and prefill; the rest is decoding the reply). */
  firstTokenMs: number;
  calls: number;
  promptTokens: number;
  cachedTokens: number;
}

describe('the real OpenClaw agent through its own Gateway daemon', () => {
  let dir: string;
  let judge: FakeJudge;
  let dev: CliProcess;
  let daemon: CliProcess;
  let store: FileSampleStore;
  let engineUrl: string;
  let gatewayUrl: string;
  let temporalAddress: string;
  let home: OpenClawHome;
  const timings: TurnTiming[] = [];

  beforeAll(async () => {
    requireOpenClaw();
    dir = await mkdtemp(join(tmpdir(), 'openclaw-daemon-e2e-'));
    judge = await startFakeJudge();
    // No epoch in this file: publishing new weights would empty the prefix cache between timed turns.
    const stack = await startDevStack(dir, { judgeUrl: judge.url, apiKey: API_KEY, batchSize: 1000 });
    ({ dev, engineUrl, gatewayUrl, store, temporalAddress } = stack);
    // OpenClaw's home and daemon come up while the stack does: the daemon needs the gateway only per turn.
    const openclawReady = (async () => {
      ({ home, daemon } = await startOpenClawDaemon(
        dir,
        { baseUrl: gatewayUrl, apiKey: API_KEY },
        'openclaw-daemon-e2e-token',
      ));
    })();
    await Promise.all([stack.ready(), openclawReady]);
  }, 600_000);

  afterAll(async () => {
    if (timings.length) {
      console.log(`OpenClaw turns through its Gateway daemon (ms, load ${loadavg()[0]?.toFixed(1)}):`);
      for (const t of timings)
        console.log(
          `  ${t.label}: client ${t.cliMs}, daemon run ${t.runMs}, gateway ${t.gatewayMs} (${t.calls} call; ` +
            `first token ${t.firstTokenMs}), OpenClaw's own ${t.runMs - t.gatewayMs}; ` +
            `prompt ${t.promptTokens} tokens, ${t.cachedTokens} cached`,
        );
    }
    await daemon?.stop(30_000);
    await dev?.stop(30_000);
    await judge?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function timedTurn(label: string, sessionId: string, message: string) {
    const before = await readGateway(gatewayUrl);
    const started = performance.now();
    const run = await home.agent(sessionId, message);
    const cliMs = Math.round(performance.now() - started);
    const after = await readGateway(gatewayUrl);
    timings.push({
      label,
      cliMs,
      runMs: run.meta.durationMs,
      gatewayMs: Math.round((after.chatSeconds - before.chatSeconds) * 1000),
      firstTokenMs: Math.round((after.firstTokenSeconds - before.firstTokenSeconds) * 1000),
      calls: after.chatRequests - before.chatRequests,
      // OpenClaw counts cached prompt tokens apart from `input` (the rest of the prompt).
      promptTokens: (run.meta.agentMeta.usage?.input ?? 0) + (run.meta.agentMeta.usage?.cacheRead ?? 0),
      cachedTokens: run.meta.agentMeta.usage?.cacheRead ?? 0,
    });
    expect(run.meta.agentMeta.sessionId).toBe(sessionId);
    return run;
  }

  async function sessionsInStore(): Promise<Set<string>> {
    await store.journaledWritten(); // the gateway journals a turn, its files follow the answer
    const keys = await store.list('turns/');
    return new Set(keys.map((key) => decodeURIComponent(key.split('/')[1] ?? '')));
  }

  it('turns through the daemon: OpenClaw session id, exact ids, the prefix cache hit after the first', async () => {
    await timedTurn('turn 1 (cold engine)', SESSION, 'Hello! Can you help me plan a trip?');
    await timedTurn('turn 2', SESSION, 'thanks, that helps. What should I pack?');
    await timedTurn('turn 3', SESSION, 'thanks! One more: what about the weather?');
    await timedTurn('turn 4', SESSION, 'thanks. And the food?');
    await timedTurn('a new session, turn 1', 'daemon-2', 'Hi, a different question today.');
    const turns = await recordedTurns(store, RECORDED);
    expect(turns).toHaveLength(4);
    for (const turn of turns) await expectExactIds(engineUrl, turn);
    // Each turn carries the conversation so far: one model call per turn (no tools offered that it called).
    expect(turns.map((t) => t.messages.filter((m) => m.role === 'assistant').length)).toEqual([0, 1, 2, 3]);
    expect(timings.slice(0, 5).map((t) => t.calls)).toEqual([1, 1, 1, 1, 1]);
    // The engine served every later prompt mostly from its prefix cache: OpenClaw's system prompt and tool
    // catalogue, then the conversation, are a shared prefix (OpenClaw's per-call context message is last).
    for (const t of timings.slice(1, 5)) expect(t.cachedTokens).toBeGreaterThan(t.promptTokens * 0.9);
  }, 900_000);

  it('a real heartbeat reaches the gateway as a side turn and is never recorded or trained', async () => {
    const before = await readGateway(gatewayUrl);
    const sessionsBefore = await sessionsInStore();
    const samplesBefore = (await store.list('samples/')).length;
    const asked = Date.now();
    // OpenClaw's documented manual wake: a system event, and a heartbeat run now in the main session.
    await home.cli([
      'system',
      'event',
      '--text',
      'Check whether the build finished.',
      '--mode',
      'now',
      '--json',
    ]);
    await waitFor(
      async () => (await readGateway(gatewayUrl)).sideTurns > before.sideTurns,
      180_000,
      "the heartbeat's model call at the gateway",
    );
    // OpenClaw's own record of it: the heartbeat ran after the event (its delivery has no route here).
    let last: z.infer<typeof HeartbeatEvent> | undefined;
    await waitFor(
      async () => {
        const { stdout } = await home.cli(['system', 'heartbeat', 'last', '--json']);
        const start = stdout.search(/^\{/m); // nothing (or `null`) until a heartbeat has finished
        if (start < 0) return false;
        last = HeartbeatEvent.parse(JSON.parse(stdout.slice(start)));
        return last.ts >= asked;
      },
      120_000,
      'OpenClaw to report the heartbeat run',
    );
    expect(last?.durationMs).toBeGreaterThan(0);
    const after: GatewayReading = await readGateway(gatewayUrl);
    console.log(
      `heartbeat: OpenClaw's run ${last?.durationMs} ms, gateway ` +
        `${Math.round((after.chatSeconds - before.chatSeconds) * 1000)} ms (${after.sideTurns - before.sideTurns} side)`,
    );
    expect(after.mainTurns).toBe(before.mainTurns);
    expect(await sessionsInStore()).toEqual(sessionsBefore);
    expect((await store.list('samples/')).length).toBe(samplesBefore);
  }, 600_000);

  it('/new through the daemon ends the session: X-Session-Done settles its last turn at once', async () => {
    const turns = await recordedTurns(store, RECORDED);
    const last = turns.at(-1) as TurnRecord;
    const settled = async () =>
      (await store.get(sampleKey(last.sampleId))) !== undefined ||
      (await store.get(exclusionKey(last.sampleId))) !== undefined;
    // Nothing follows the last turn yet, and the idle timer is 30 minutes away: it is still open.
    expect(await settled()).toBe(false);
    const before = await readGateway(gatewayUrl);
    const run = await home.agent(SESSION, '/new');
    expect(run.payloads.map((p) => p.text).join(' ')).toMatch(/new session/i);
    const asked = Date.now();
    await waitFor(settled, 120_000, `the last turn ${last.sampleId} settled after /new`);
    console.log(`/new: the last turn settled ${Date.now() - asked} ms after OpenClaw answered`);
    // The plugin's session-done request is a side turn: served, not recorded.
    const after = await readGateway(gatewayUrl);
    expect(after.sideTurns).toBe(before.sideTurns + 1);
    expect(after.mainTurns).toBe(before.mainTurns);
    expect(await recordedTurns(store, RECORDED)).toHaveLength(turns.length);
    // The session workflow closed on the done signal (not its idle timer), having scored every turn.
    const { client, connection } = await connectTestClient(temporalAddress);
    try {
      const result = await client.workflow
        .getHandle<typeof sessionWorkflow>(sessionWorkflowId(RECORDED))
        .result();
      expect(result).toMatchObject({ sessionId: RECORDED, end: 'done-signal', turnsScored: turns.length });
    } finally {
      await connection.close();
    }
  }, 600_000);
});
