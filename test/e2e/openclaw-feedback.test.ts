import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { feedbackKey, feedbackPrefix } from '../../core/feedback.js';
import { clientSessionId, scopedSessionId } from '../../core/tenant.js';
import { sampleKey, type TurnRecord } from '../../core/turn-record.js';
import type { TrainingSample } from '../../core/types.js';
import { apiKeyName } from '../../gateway/auth.js';
import type { FileSampleStore } from '../../store/sample-store.js';
import type { CliProcess } from '../support/cli-process.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { readGateway } from '../support/gateway-metrics.js';
import {
  type ModelCallRecorder,
  type RecordedCall,
  startModelCallRecorder,
} from '../support/model-call-recorder.js';
import { type OpenClawHome, requireOpenClaw, startOpenClawDaemon } from '../support/openclaw-agent.js';
import { startDevStack } from '../support/openclaw-dev-stack.js';
import { recordedTurns } from '../support/turn-lookup.js';
import { waitFor } from '../support/wait-for.js';

// The real OpenClaw agent through its own Gateway daemon, with the plugin, in front of `openclaw-rl dev`: two
// users' sessions running at once in the one daemon process, then the plugin's feedback commands. Between
// OpenClaw and the gateway sits a recorder that keeps each request's headers and body (it changes nothing).

const API_KEY = 'openclaw-feedback-e2e-key';
const TENANT = apiKeyName(API_KEY);
/** Each session's opening message names its own city: a call's body says which session it belongs to. */
const SESSIONS = { 'conc-oslo': 'Oslo', 'conc-lima': 'Lima' } as const;

/** What `openclaw agent --json` prints when the daemon ran the turn (only the fields the test reads). */
const DaemonRun = z.looseObject({
  status: z.literal('ok'),
  result: z.looseObject({ payloads: z.array(z.looseObject({ text: z.string().nullish() })) }),
});

/** A stored sample with what scoring noted of the turn's feedback. */
type RatedSample = TrainingSample & {
  judge?: { feedback?: { rating: number | null; correction: string | null; feedbackIds: string[] } };
};

/** What the daemon's `chat.history` method answers (only the fields the test reads). */
const ChatHistory = z.looseObject({
  sessionId: z.string().optional(),
  messages: z.array(
    z.looseObject({ role: z.string(), content: z.unknown(), idempotencyKey: z.string().optional() }),
  ),
});

/** The text of a transcript message's content (a string, or text parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part as { text?: string }).text ?? '').join('');
}

/** The JSON document `openclaw ... --json` printed last (a first run may print notices before it). */
function printedJson(stdout: string): unknown {
  return JSON.parse(stdout.slice(Math.max(0, stdout.search(/^\{/m))));
}

describe('the OpenClaw plugin in a daemon: concurrent sessions and feedback commands', () => {
  let dir: string;
  let judge: FakeJudge;
  let dev: CliProcess;
  let daemon: CliProcess;
  let store: FileSampleStore;
  let gatewayUrl: string;
  let recorder: ModelCallRecorder;
  let home: OpenClawHome;

  beforeAll(async () => {
    requireOpenClaw();
    dir = await mkdtemp(join(tmpdir(), 'openclaw-feedback-e2e-'));
    judge = await startFakeJudge();
    const stack = await startDevStack(dir, { judgeUrl: judge.url, apiKey: API_KEY, batchSize: 1000 });
    ({ dev, gatewayUrl, store } = stack);
    recorder = await startModelCallRecorder(gatewayUrl);
    const openclawReady = (async () => {
      ({ home, daemon } = await startOpenClawDaemon(
        dir,
        { baseUrl: recorder.url, apiKey: API_KEY },
        'openclaw-feedback-e2e-token',
      ));
    })();
    await Promise.all([stack.ready(), openclawReady]);
  }, 600_000);

  afterAll(async () => {
    await daemon?.stop(30_000);
    await recorder?.close();
    await dev?.stop(30_000);
    await judge?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A user turn through the daemon (`openclaw agent --session-id S --message M --json`): the reply's text. */
  async function say(sessionId: string, message: string): Promise<string> {
    const { stdout } = await home.cli(['agent', '--session-id', sessionId, '--message', message, '--json']);
    return DaemonRun.parse(printedJson(stdout))
      .result.payloads.map((p) => p.text ?? '')
      .join('\n');
  }

  let sent = 0;
  /**
   * A chat command as the Control UI, the TUI and the channels send it: the daemon's `chat.send` method on the
   * session's key (`openclaw agent --session-id S` runs in `agent:main:explicit:S`). `openclaw agent` passes a
   * message to the model as it is, commands included; the daemon's chat path runs commands. Resolves with the
   * reply the daemon added to the session's transcript. `started`: the session has had a turn (so OpenClaw
   * knows it by that id).
   */
  async function command(sessionId: string, text: string, started = true): Promise<string> {
    const sessionKey = `agent:main:explicit:${sessionId}`;
    const idempotencyKey = `feedback-e2e-${++sent}`;
    const call = (method: string, params: Record<string, unknown>) =>
      home.cli(['gateway', 'call', method, '--params', JSON.stringify(params), '--json']);
    await call('chat.send', { sessionKey, message: text, idempotencyKey });
    let reply: string | undefined;
    await waitFor(
      async () => {
        const history = ChatHistory.parse(printedJson((await call('chat.history', { sessionKey })).stdout));
        if (started) expect(history.sessionId).toBe(sessionId);
        const answer = history.messages.find(
          (m) => m.role === 'assistant' && m.idempotencyKey === idempotencyKey,
        );
        reply = answer && textOf(answer.content);
        return reply !== undefined;
      },
      60_000,
      `the reply to ${text}`,
    );
    return reply as string;
  }

  it('two sessions at once in one daemon: every model call carries its own session id', async () => {
    // Two users message the daemon at the same moment; a header kept between calls would file one user's turn
    // under the other's session (and train on the wrong conversation).
    const together = recorder.gatherChats(2, 180_000);
    const runs = Object.entries(SESSIONS).map(([session, city]) =>
      say(session, `Hello! Can you help me plan a trip to ${city}?`),
    );
    // Both sessions' first model calls were waiting at the recorder at the same time.
    expect(await together).toBe(true);
    await Promise.all(runs);

    const chats = recorder.calls('/v1/chat/completions');
    expect(chats.length).toBeGreaterThanOrEqual(2);
    for (const call of chats) {
      const session = call.headers['x-session-id'] as keyof typeof SESSIONS;
      expect(Object.keys(SESSIONS)).toContain(session);
      expect(call.headers['x-turn-type']).toBe('main');
      const said = JSON.stringify((call.body as { messages: unknown[] }).messages);
      for (const [other, city] of Object.entries(SESSIONS))
        expect(said.includes(`trip to ${city}`), `${session}'s call mentions ${city}`).toBe(
          other === session,
        );
    }
    // The gateway filed each session's turn under that session, with that session's conversation.
    for (const [session, city] of Object.entries(SESSIONS)) {
      const turns = await recordedTurns(store, scopedSessionId(TENANT, session));
      expect(turns).toHaveLength(1);
      expect(JSON.stringify((turns[0] as TurnRecord).messages)).toContain(`trip to ${city}`);
    }
  }, 600_000);

  it('/good, /fix and /bad in the daemon: feedback on the last turn, with no model call', async () => {
    // A user thumbs the last reply up, or says what they meant; a model call here would answer the command as
    // if it were a message (and record it as a turn), and a wrong session id would rate someone else's turn.
    const before = await readGateway(gatewayUrl);
    const chatsBefore = recorder.calls('/v1/chat/completions').length;
    const [oslo] = await recordedTurns(store, scopedSessionId(TENANT, 'conc-oslo'));
    const [lima] = await recordedTurns(store, scopedSessionId(TENANT, 'conc-lima'));

    const good = await command('conc-oslo', '/good');
    const fix = await command(
      'conc-lima',
      '/fix Lima in May: pack a light jacket, it is the start of winter.',
    );
    console.log(`/good replied: ${good}\n/fix replied: ${fix}`);
    expect(good).toBe('Feedback sent on the last turn: 👍.');
    expect(fix).toBe('Feedback sent on the last turn: 👎, with your correction.');

    const feedback = recorder.calls('/v1/feedback');
    expect(feedback.map((f) => f.body)).toEqual([
      { session_id: 'conc-oslo', rating: 1 },
      {
        session_id: 'conc-lima',
        rating: -1,
        correction: 'Lima in May: pack a light jacket, it is the start of winter.',
      },
    ]);
    expect(feedback.map((f) => f.headers.authorization)).toEqual([`Bearer ${API_KEY}`, `Bearer ${API_KEY}`]);
    // The gateway put each on that session's latest main turn (named without the tenant), stored it, and
    // scored the turn at once with the rating as its reward.
    expect(feedback.map((f) => f.status)).toEqual([200, 200]);
    expect(feedback.map((f) => (f.answer as { turn_id: string }).turn_id)).toEqual([
      clientSessionId(oslo?.sampleId ?? null),
      clientSessionId(lima?.sampleId ?? null),
    ]);
    for (const [index, [turn, rating, correction]] of (
      [
        [oslo, 1, null],
        [lima, -1, 'Lima in May: pack a light jacket, it is the start of winter.'],
      ] as const
    ).entries()) {
      const { sampleId } = turn as TurnRecord;
      const { id } = (feedback[index] as RecordedCall).answer as { id: string };
      expect(await store.list(feedbackPrefix(sampleId))).toEqual([feedbackKey(sampleId, id)]);
      let sample: RatedSample | undefined;
      await waitFor(
        async () => {
          sample = await store.get<RatedSample>(sampleKey(sampleId));
          return sample !== undefined;
        },
        120_000,
        `the rated turn ${sampleId} scored`,
      );
      expect(sample?.reward).toBe(rating);
      expect(sample?.judge?.feedback).toEqual({ rating, correction, feedbackIds: [id] });
    }

    // A usage mistake is answered by the plugin alone; a session with no turn yet by the gateway's refusal.
    expect(await command('conc-lima', '/rate 7')).toMatch(/^Usage: \/rate /);
    const none = await command('conc-quiet', '/bad', false);
    console.log(`/bad on a session without turns replied: ${none}`);
    expect(none).toMatch(/^Feedback not sent: /);
    expect(recorder.calls('/v1/feedback')).toHaveLength(3);
    expect(recorder.calls('/v1/feedback').at(-1)?.status).toBe(404);

    // None of it was a model call.
    expect(recorder.calls('/v1/chat/completions')).toHaveLength(chatsBefore);
    const after = await readGateway(gatewayUrl);
    expect(after.chatRequests).toBe(before.chatRequests);
    expect(after.mainTurns).toBe(before.mainTurns);
  }, 600_000);

  it('the turn after a feedback command continues the conversation it rated', async () => {
    // A user rates a reply and goes on talking; if the command broke the conversation's thread, the rated
    // turn would never get its next state and the new turn would start a conversation of its own.
    const [rated] = await recordedTurns(store, scopedSessionId(TENANT, 'conc-oslo'));
    await say('conc-oslo', 'thanks! And where should I stay?');
    const turns = await recordedTurns(store, scopedSessionId(TENANT, 'conc-oslo'));
    expect(turns).toHaveLength(2);
    const next = turns[1] as TurnRecord;
    console.log(
      `the next turn's messages after /good: ${JSON.stringify(next.messages.slice(1).map((m) => [m.role, textOf(m.content).slice(0, 80)]))}`,
    );
    expect(next.continues?.sampleId).toBe(rated?.sampleId);
  }, 600_000);
});
