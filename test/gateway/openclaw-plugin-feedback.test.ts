import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import plugin, {
  type CommandDefinition,
  FEEDBACK_COMMANDS,
  type PluginApi,
  parseFeedbackCommand,
  TurnTypes,
} from '../../openclaw-plugin/index.js';
import {
  type FeedbackGatewayDouble,
  startFeedbackGatewayDouble,
} from '../support/feedback-gateway-double.js';

// The plugin's feedback commands as OpenClaw calls them (a handler given the session id and the text after the
// command), against an HTTP server that answers as the gateway's feedback API does: what each command sends,
// what the user is shown, and that the headers of concurrent calls never mix.

const API_KEY = 'feedback-key';

/** Loads the plugin as OpenClaw does (its `register(api)`), keeping the commands it registers. */
function loadPlugin(config: PluginApi['config']): Map<string, CommandDefinition> {
  const commands = new Map<string, CommandDefinition>();
  const api: PluginApi = {
    config,
    pluginConfig: {},
    logger: { info: () => {}, warn: () => {} },
    registerProvider: () => {},
    on: () => {},
    registerCommand: (command) => commands.set(command.name, command),
  };
  plugin.register(api);
  return commands;
}

describe('the OpenClaw plugin feedback commands', () => {
  let gateway: FeedbackGatewayDouble;
  let commands: Map<string, CommandDefinition>;

  beforeAll(async () => {
    gateway = await startFeedbackGatewayDouble(API_KEY);
    gateway.addTurn('chat-1', 'chat-1:2-abc');
    // The key as OpenClaw config may hold it: a reference to an environment variable.
    const apiKey = ['$', '{FEEDBACK_KEY}'].join('');
    commands = loadPlugin({
      models: { providers: { 'openclaw-rl': { baseUrl: `${gateway.url}/`, apiKey } } },
    });
    process.env.FEEDBACK_KEY = API_KEY;
  });

  afterAll(async () => {
    delete process.env.FEEDBACK_KEY;
    await gateway?.close();
  });

  async function run(name: string, sessionId: string | undefined, args?: string) {
    const command = commands.get(name);
    if (!command) throw new Error(`/${name} is not registered`);
    const before = gateway.requests.length;
    const result = await command.handler({
      sessionId,
      args,
      commandBody: args ? `/${name} ${args}` : `/${name}`,
    });
    return { text: result.text, sent: gateway.requests.slice(before) };
  }

  it('registers /good, /bad, /fix and /rate; only /good takes no text', () => {
    expect([...commands.keys()]).toEqual(['good', 'bad', 'fix', 'rate']);
    expect(FEEDBACK_COMMANDS.filter((c) => !c.acceptsArgs).map((c) => c.name)).toEqual(['good']);
    for (const command of commands.values()) expect(command.description.length).toBeGreaterThan(0);
  });

  it('/good and /bad send a thumbs rating on the session, with the provider key', async () => {
    // A user thumbs the last reply up, then down; a wrong key or session would rate another user's turn.
    const good = await run('good', 'chat-1');
    expect(good.text).toBe('Feedback sent on the last turn: 👍.');
    expect(good.sent).toHaveLength(1);
    expect(good.sent[0]?.path).toBe('/v1/feedback');
    expect(good.sent[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(good.sent[0]?.body).toEqual({ session_id: 'chat-1', rating: 1 });
    const bad = await run('bad', 'chat-1');
    expect(bad.text).toBe('Feedback sent on the last turn: 👎.');
    expect(bad.sent[0]?.body).toEqual({ session_id: 'chat-1', rating: -1 });
  });

  it('/fix and /bad with text send the correction; /rate sends its score', async () => {
    // A user says what they meant; losing the text would leave only a thumbs-down to learn from.
    const fix = await run('fix', 'chat-1', '  Pack light: two shirts and a rain jacket. ');
    expect(fix.text).toBe('Feedback sent on the last turn: 👎, with your correction.');
    expect(fix.sent[0]?.body).toEqual({
      session_id: 'chat-1',
      rating: -1,
      correction: 'Pack light: two shirts and a rain jacket.',
    });
    const bad = await run('bad', 'chat-1', 'Say it in French.');
    expect(bad.sent[0]?.body).toEqual({ session_id: 'chat-1', rating: -1, correction: 'Say it in French.' });
    const rate = await run('rate', 'chat-1', '0.5 shorter, please');
    expect(rate.text).toBe('Feedback sent on the last turn: rating 0.5, with your correction.');
    expect(rate.sent[0]?.body).toEqual({ session_id: 'chat-1', rating: 0.5, correction: 'shorter, please' });
  });

  it('a command without what it needs shows its usage and sends nothing', async () => {
    // A user types /fix alone or /rate 5; sending it would record a rating they did not mean.
    for (const [name, args] of [
      ['fix', undefined],
      ['fix', '   '],
      ['rate', undefined],
      ['rate', '5'],
      ['rate', 'great'],
      ['rate', '0x1'],
    ] as const) {
      const { text, sent } = await run(name, 'chat-1', args);
      expect(text).toMatch(/^Usage: \/(fix|rate) /);
      expect(sent).toEqual([]);
    }
    expect(parseFeedbackCommand('rate', '-1')).toEqual({ rating: -1 });
    expect(parseFeedbackCommand('rate', '+.25')).toEqual({ rating: 0.25 });
  });

  it("the gateway's refusal is shown to the user", async () => {
    // A user rates a session with no recorded turn yet; a silent failure would look like it counted.
    const none = await run('good', 'no-turns-yet');
    expect(none.sent).toHaveLength(1);
    expect(none.text).toBe('Feedback not sent: session no-turns-yet has no recorded main turn here');
    const noSession = await run('good', undefined);
    expect(noSession.sent).toEqual([]);
    expect(noSession.text).toMatch(/^Feedback not sent: this conversation has no OpenClaw session/);
    const wrongKey = loadPlugin({
      models: { providers: { 'openclaw-rl': { baseUrl: gateway.url, apiKey: 'other' } } },
    }).get('good');
    expect((await wrongKey?.handler({ sessionId: 'chat-1', commandBody: '/good' }))?.text).toBe(
      'Feedback not sent: invalid api key',
    );
    const down = loadPlugin({
      models: { providers: { 'openclaw-rl': { baseUrl: 'http://127.0.0.1:1/v1', apiKey: API_KEY } } },
    }).get('good');
    expect((await down?.handler({ sessionId: 'chat-1', commandBody: '/good' }))?.text).toMatch(
      /^Feedback not sent: the gateway did not answer/,
    );
  });

  it('the config a command is given wins over the one the plugin loaded with', async () => {
    // A user edits the provider's key while the daemon runs; the command uses OpenClaw's current config.
    const stale = loadPlugin({
      models: { providers: { 'openclaw-rl': { baseUrl: gateway.url, apiKey: 'old-key' } } },
    }).get('good');
    const result = await stale?.handler({
      sessionId: 'chat-1',
      commandBody: '/good',
      config: { models: { providers: { 'openclaw-rl': { baseUrl: gateway.url, apiKey: API_KEY } } } },
    });
    expect(result?.text).toBe('Feedback sent on the last turn: 👍.');
  });

  it('concurrent model calls each carry their own session id (headers are per call)', async () => {
    // Two sessions' runs interleave in one OpenClaw process; a header kept between calls would cross them.
    const turnTypes = new TurnTypes(new Set(['heartbeat']));
    turnTypes.noteRun({ runId: 'run-a', sessionId: 'a', trigger: 'user' });
    turnTypes.noteRun({ runId: 'run-b', sessionId: 'b', trigger: 'heartbeat' });
    const calls = await Promise.all(
      ['a', 'b', 'a', 'b'].map(async (session, index) => {
        await new Promise((resolve) => setTimeout(resolve, (4 - index) * 5));
        return turnTypes.headers({ sessionId: session, requestId: `run-${session}:model:${index}` });
      }),
    );
    expect(calls).toEqual([
      { 'X-Session-Id': 'a', 'X-Turn-Type': 'main' },
      { 'X-Session-Id': 'b', 'X-Turn-Type': 'side' },
      { 'X-Session-Id': 'a', 'X-Turn-Type': 'main' },
      { 'X-Session-Id': 'b', 'X-Turn-Type': 'side' },
    ]);
  });
});
