// The bad-input suite: hostile and broken input at every door, against the real parts. A real `openclaw-rl
// gateway` process (keys file, body limit) in front of a real reference engine, a real control worker on the
// run's Temporal server scoring with a judge that answers gibberish, and the real task loaders (terminal, GUI,
// SWE). Every case must end in a clear refusal (a 4xx in OpenAI's error JSON, a loader error naming the field)
// or a recorded outcome (a path-safe session id, an exclusion), never a 5xx, a crash or a lost turn: a
// conversation accepted before the barrage is compared record for record after it, and continues.
//
// Figures (cases tried, how each ended, grouped) go to build/test-figures/bad-input.json and a table is
// printed; docs/security.md shows it.

import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { configFromFlags } from '../../cli/cli-config.js';
import { scopedSessionId } from '../../core/tenant.js';
import { exclusionKey, sampleKey } from '../../core/turn-record.js';
import type { SampleExclusion, TrainingSample } from '../../core/types.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { readGuiTaskFile } from '../../environments/gui/gui-tasks.js';
import { localPath } from '../../environments/gui/task-setup.js';
import { SweEnvironment } from '../../environments/swe/swe-environment.js';
import { TerminalEnvironment } from '../../environments/terminal/terminal-environment.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { sessionWorkflowId } from '../../temporal/workflow-ids.js';
import { freePort, sessionSignals, terminateSessions } from '../gateway/gateway-fixture.js';
import { type CliProcess, cliTestEnvironment, startCli } from '../support/cli-process.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { recordedTurns } from '../support/turn-lookup.js';
import { createTestControlWorker } from '../support/workflow-bundle.js';

const KEY = 'bad-input-key-of-alice';
const TENANT = 'alice';
const BODY_LIMIT = 32 * 1024;
const FIGURES = join(import.meta.dirname, '../../build/test-figures/bad-input.json');

interface Outcome {
  group: string;
  name: string;
  /** How it ended, e.g. `400 invalid_request_error (messages[0].role)`, `excluded: neutral-score`. */
  ended: string;
}

/** What a judge that has lost its mind answers, by case (the case name is in the conversation it judges). */
const JUDGE_GIBBERISH: Record<string, { content: string | null } | { raw: string }> = {
  prose: { content: 'Well, the assistant said some things and the user said some things too.' },
  'boxed-word': { content: 'Score: \\boxed{banana}' },
  'out-of-range': { content: '\\boxed{7}' },
  unterminated: { content: '\u0000\u0007\uffff \\boxed{1' },
  huge: { content: `${'ha'.repeat(100_000)} \\boxed{` },
  'null-content': { content: null },
  'last-box-wins': { content: '\\boxed{-1} no wait \\boxed{1}' },
  'not-json': { raw: '<html>502 Bad Gateway</html>' },
};

describe('bad input', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let judge: FakeJudge;
  let gateway: CliProcess;
  let worker: Worker;
  let running: Promise<void>;
  let url: string;
  let store: FileSampleStore;
  const sessions = new Set<string>();
  const outcomes: Outcome[] = [];

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'bad-input-'));
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')) });
    judge = await startFakeJudge({
      answer: ({ user }) => {
        const name = /case:([a-z-]+)/.exec(user)?.[1];
        return name === undefined ? undefined : JUDGE_GIBBERISH[name];
      },
    });
    await writeFile(join(dir, 'api-keys'), `${KEY} ${TENANT}\n`, { mode: 0o600 });
    const port = await freePort();
    const settings: NodeJS.ProcessEnv = {
      ...cliTestEnvironment(),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      OPENCLAW_DATA_DIR: join(dir, 'data'),
      OPENCLAW_ENGINE_URL: engine.url,
      OPENCLAW_API_KEYS_FILE: join(dir, 'api-keys'),
      OPENCLAW_GATEWAY_BODY_LIMIT_BYTES: String(BODY_LIMIT),
      OPENCLAW_CONTROL_TASK_QUEUE: uniqueTaskQueue('bad-input'),
      OPENCLAW_RUN_ID: `bad-input-${process.pid}`,
      OPENCLAW_METHOD: 'rl',
      OPENCLAW_BATCH_SIZE: '1000',
      OPENCLAW_JUDGE_URL: judge.url,
      OPENCLAW_JUDGE_MODEL: 'gibberish-judge',
      OPENCLAW_JUDGE_VOTES: '1',
      OPENCLAW_HEARTBEAT_TIMEOUT_MS: '5000',
      OPENCLAW_SESSION_IDLE_TIMEOUT_MS: '600000',
    };
    const config = configFromFlags({}, settings);
    store = new FileSampleStore(join(dir, 'data', 'store'));
    worker = await createTestControlWorker(config, env, { store });
    running = worker.run();
    gateway = startCli('gateway', ['gateway', '--port', String(port)], settings, join(dir, 'gateway.log'));
    await gateway.waitForLine(/^gateway http/, 60_000);
    url = `http://127.0.0.1:${port}`;
  }, 240_000);

  afterAll(async () => {
    await gateway?.stop();
    if (env) await terminateSessions(env, sessions);
    worker?.shutdown();
    await running?.catch(() => undefined);
    await judge?.close();
    await engine?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const scoped = (id: string) => {
    const sessionId = scopedSessionId(TENANT, id);
    sessions.add(sessionId);
    return sessionId;
  };

  async function post(
    body: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; json: Record<string, unknown> | null }> {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...headers },
      body,
    });
    const text = await response.text();
    let json: Record<string, unknown> | null = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: the case fails below
    }
    return { status: response.status, json };
  }

  const chat = (messages: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({ model: 'tiny', messages, max_tokens: 3, ...extra });

  /** A refusal: a 4xx whose body is OpenAI's error JSON. */
  function refusal(status: number, json: Record<string, unknown> | null): string {
    const error = json?.error as
      | { message?: unknown; type?: unknown; param?: unknown; code?: unknown }
      | undefined;
    expect(status, JSON.stringify(json)).toBeGreaterThanOrEqual(400);
    expect(status, JSON.stringify(json)).toBeLessThan(500);
    expect(typeof error?.message).toBe('string');
    expect(typeof error?.type).toBe('string');
    const detail = error?.param ?? error?.code;
    return `${status} ${error?.type}${detail ? ` (${detail})` : ''}`;
  }

  // The conversation accepted before anything hostile arrives.
  const baseline = { id: `baseline-${process.pid}`, messages: [] as unknown[] };
  let before: string;

  it('accepts a conversation first', async () => {
    baseline.messages = [{ role: 'user', content: 'Plan my week.' }];
    for (const next of ['thanks', 'and the weekend?']) {
      const answered = await post(chat(baseline.messages), { 'x-session-id': baseline.id });
      expect(answered.status).toBe(200);
      const reply = (answered.json?.choices as { message: { content: string } }[] | undefined)?.[0]?.message
        .content;
      baseline.messages.push({ role: 'assistant', content: reply }, { role: 'user', content: next });
    }
    const turns = await recordedTurns(store, scoped(baseline.id));
    expect(turns).toHaveLength(2);
    before = JSON.stringify(turns);
  });

  const malformed: [string, string, Record<string, string>?][] = [
    ['truncated object', '{'],
    ['truncated list', '{"model":"tiny","messages":['],
    ['trailing garbage', `${chat([{ role: 'user', content: 'hi' }])} trailing`],
    ['NaN', 'NaN'],
    ['empty body', ''],
    ['null', 'null'],
    ['a list', '[]'],
    ['a string', '"hi"'],
    ['a number', '42'],
    ['nested 5,000 deep', `{"messages":${'['.repeat(5000)}${']'.repeat(5000)}}`],
    ['text/plain', chat([{ role: 'user', content: 'hi' }]), { 'content-type': 'text/plain' }],
    ['no content-type', chat([{ role: 'user', content: 'hi' }]), { 'content-type': '' }],
  ];
  const user = [{ role: 'user', content: 'hi' }];
  const wrongTypes: [string, Record<string, unknown>][] = [
    ['messages a string', { messages: 'hi' }],
    ['messages an object', { messages: { role: 'user' } }],
    ['messages empty', { messages: [] }],
    ['content a number', { messages: [{ role: 'user', content: 5 }] }],
    ['content part without type', { messages: [{ role: 'user', content: [{ text: 'hi' }] }] }],
    ['max_tokens a string', { messages: user, max_tokens: 'ten' }],
    ['max_tokens 0', { messages: user, max_tokens: 0 }],
    ['max_tokens 1.5', { messages: user, max_tokens: 1.5 }],
    ['temperature a string', { messages: user, temperature: 'hot' }],
    ['temperature -1', { messages: user, temperature: -1 }],
    ['temperature 1e308', { messages: user, temperature: 1e308 }],
    ['top_p 0', { messages: user, top_p: 0 }],
    ['n 2', { messages: user, n: 2 }],
    ['stream "yes"', { messages: user, stream: 'yes' }],
    ['tools a string', { messages: user, tools: 'x' }],
    ['tool without a name', { messages: user, tools: [{ type: 'function', function: {} }] }],
    ['seed -1', { messages: user, seed: -1 }],
    ['stop a number', { messages: user, stop: 5 }],
    ['logprobs "true"', { messages: user, logprobs: 'true' }],
    ['top_logprobs without logprobs', { messages: user, top_logprobs: 3 }],
    ['model a number', { messages: user, model: 42 }],
    ['input_ids', { messages: user, input_ids: [1, 2, 3] }],
    ['chat_template_kwargs a string', { messages: user, chat_template_kwargs: 'x' }],
    ['session_id an object', { messages: user, session_id: { $gt: '' } }],
    ['user a list', { messages: user, user: ['alice'] }],
  ];
  const badRoles: [string, unknown[]][] = [
    ['role root', [{ role: 'root', content: 'hi' }]],
    ['role empty', [{ role: '', content: 'hi' }]],
    ['role missing', [{ content: 'hi' }]],
    ['role function', [{ role: 'function', content: 'hi', name: 'f' }]],
    ['role a number', [{ role: 7, content: 'hi' }]],
    ['role in capitals', [{ role: 'USER', content: 'hi' }]],
    ['tool call without a name', [...user, { role: 'assistant', tool_calls: [{ function: {} }] }]],
    ['tool content an object', [...user, { role: 'tool', content: { x: 1 }, tool_call_id: 'c' }]],
    ['message a string', ['hi']],
  ];

  it('refuses malformed JSON, wrong types and bad roles with OpenAI errors', async () => {
    for (const [name, body, headers] of malformed) {
      const { status, json } = await post(body, headers);
      outcomes.push({ group: 'malformed JSON', name, ended: refusal(status, json) });
    }
    for (const [name, fields] of wrongTypes) {
      const { status, json } = await post(JSON.stringify({ model: 'tiny', max_tokens: 3, ...fields }));
      outcomes.push({ group: 'wrong types', name, ended: refusal(status, json) });
    }
    for (const [name, messages] of badRoles) {
      const { status, json } = await post(chat(messages));
      outcomes.push({ group: 'bad roles', name, ended: refusal(status, json) });
    }
  });

  it('refuses oversize bodies, missing keys and unknown routes', async () => {
    const oversize: [string, string][] = [
      ['just over the limit', chat([{ role: 'user', content: 'x'.repeat(BODY_LIMIT) }])],
      ['1 MB', chat([{ role: 'user', content: 'x'.repeat(1024 * 1024) }])],
      ['20,000 messages', chat(Array.from({ length: 20_000 }, () => ({ role: 'user', content: 'hi' })))],
    ];
    for (const [name, body] of oversize) {
      const { status, json } = await post(body);
      outcomes.push({ group: 'oversize bodies', name, ended: refusal(status, json) });
    }
    const keys: [string, Record<string, string>][] = [
      ['no key', { authorization: '' }],
      ['wrong key', { authorization: 'Bearer not-a-key' }],
      ['basic auth', { authorization: `Basic ${Buffer.from(`alice:${KEY}`).toString('base64')}` }],
      ['10 KB key', { authorization: `Bearer ${'k'.repeat(10_000)}` }],
    ];
    for (const [name, headers] of keys) {
      const { status, json } = await post(chat(user), headers);
      outcomes.push({ group: 'keys', name, ended: refusal(status, json) });
    }
    for (const [name, path, method] of [
      ['GET chat completions', '/v1/chat/completions', 'GET'],
      ['a path out of the routes', '/v1/../../etc/passwd', 'GET'],
      ['legacy completions', '/v1/completions', 'POST'],
    ] as const) {
      const response = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${KEY}` } });
      outcomes.push({
        group: 'routes',
        name,
        ended: refusal(response.status, (await response.json()) as Record<string, unknown>),
      });
    }
    const idempotency = await post(chat(user), { 'idempotency-key': 'k'.repeat(10_000) });
    outcomes.push({
      group: 'keys',
      name: '10 KB Idempotency-Key',
      ended: refusal(idempotency.status, idempotency.json),
    });
  });

  it('records hostile session ids under path-safe ids of the caller tenant, or refuses them', async () => {
    const hostile: [string, 'header' | 'body' | 'user', string][] = [
      ['path separators', 'header', '../../../etc/passwd'],
      ['slashes', 'header', 'alice/other'],
      ['dot dot', 'header', '..'],
      ['dot', 'body', '.'],
      ['dots', 'user', '...'],
      ['10 KB', 'header', 's'.repeat(10_000)],
      ['10 KB in the body', 'body', 'b'.repeat(10_000)],
      ['unicode', 'body', '会话-😀-\u202e'],
      ['NUL', 'body', 'abc\u0000def'],
      ['NUL as user', 'user', '\u0000'],
      ['percent-encoded traversal', 'header', '%2e%2e%2f%2e%2e%2f'],
      ['another tenant spelled out', 'user', 'bob/chat-1'],
    ];
    for (const [name, where, id] of hostile) {
      const extra = where === 'header' ? {} : { [where === 'body' ? 'session_id' : 'user']: id };
      const headers = where === 'header' ? { 'x-session-id': id } : undefined;
      const { status, json } = await post(chat([{ role: 'user', content: `id ${name}` }], extra), headers);
      expect(status, JSON.stringify(json)).toBe(200);
      const returned = String(json?.session_id);
      // The id as recorded: the caller's tenant, then the id itself only when it is short and plain.
      expect(returned).toMatch(/^(h-[0-9a-f]{16}|[A-Za-z0-9._:@-]{1,128})$/);
      const turns = await recordedTurns(store, scoped(returned));
      expect(turns).toHaveLength(1);
      expect(turns[0]?.sessionId).toBe(`${TENANT}/${returned}`);
      outcomes.push({
        group: 'hostile session ids',
        name,
        ended: returned.startsWith('h-')
          ? 'recorded under alice/h-<hash>'
          : `recorded under alice/${returned}`,
      });
    }
    // Every session folder of the store is one path component inside it.
    for (const folder of await readdir(join(dir, 'data', 'store', 'turns')))
      expect(folder.startsWith(`${TENANT}%2F`), folder).toBe(true);
  });

  it('refuses hostile task files and paths in the terminal, GUI and SWE loaders, naming the field', async () => {
    const tasks = join(dir, 'tasks');
    const task = async (name: string, files: Record<string, string>, links: Record<string, string> = {}) => {
      await mkdir(join(tasks, name), { recursive: true });
      for (const [file, text] of Object.entries(files)) await writeFile(join(tasks, name, file), text);
      for (const [file, target] of Object.entries(links)) await symlink(target, join(tasks, name, file));
    };
    const terminal = new TerminalEnvironment({ config: { tasksDir: tasks, buildTaskImages: false } });
    await task('yaml-link', {}, { 'task.yaml': '/etc/passwd' });
    await task('setup-link', { 'task.yaml': 'instruction: hi\n' }, { 'setup.sh': '/etc/hostname' });
    await task('dangling', { 'task.yaml': 'instruction: hi\n' }, { 'setup.sh': join(tasks, 'nothing-here') });
    await task('bad-yaml', { 'task.yaml': 'instruction: [unclosed\n' });
    await task('no-instruction', { 'task.yaml': 'difficulty: 3\n' });
    const cases: [string, string, () => Promise<unknown>, RegExp][] = [
      [
        'terminal',
        'task.yaml a link to /etc/passwd',
        () => terminal.loadTask('yaml-link'),
        /outside the task's folder/,
      ],
      [
        'terminal',
        'setup.sh a link out',
        () => terminal.loadTask('setup-link'),
        /setup\.sh.*outside the task's folder/,
      ],
      ['terminal', 'a dangling link', () => terminal.loadTask('dangling'), /a link to nothing/],
      ['terminal', 'task id with ..', () => terminal.loadTask('../../etc'), /neither a task name/],
      ['terminal', 'malformed task.yaml', () => terminal.loadTask('bad-yaml'), /task\.yaml|instruction/],
      [
        'terminal',
        'task.yaml without an instruction',
        () => terminal.loadTask('no-instruction'),
        /instruction/,
      ],
    ];
    const gui = join(tasks, 'gui');
    await mkdir(gui, { recursive: true });
    await writeFile(join(gui, 'not-json.json'), '{"id": ');
    await writeFile(join(gui, 'wrong-shape.json'), JSON.stringify({ id: 5, config: 'x' }));
    await symlink(join(process.env.HOME ?? '/root', '.ssh'), join(gui, 'keys'));
    const field = 'config[0].parameters.files[0].url';
    cases.push(
      [
        'GUI',
        'a task file that is not JSON',
        () => readGuiTaskFile(join(gui, 'not-json.json')),
        /not-json\.json/,
      ],
      [
        'GUI',
        'a task of the wrong shape',
        () => readGuiTaskFile(join(gui, 'wrong-shape.json')),
        /wrong-shape\.json/,
      ],
      [
        'GUI',
        'file:///etc/passwd',
        () => localPath('file:///etc/passwd', gui, field),
        /files\[0\]\.url.*outside/,
      ],
      [
        'GUI',
        '../../ out of the folder',
        () => localPath('../../../etc/shadow', gui, field),
        /outside the task's folder/,
      ],
      [
        'GUI',
        'a link to ~/.ssh',
        () => localPath('keys/id_rsa', gui, field),
        /outside the task's folder|does not exist/,
      ],
    );
    await writeFile(join(tasks, 'rows.jsonl'), '{"instance_id": "../../x", "repo": 5}\nnot json\n');
    const swe = new SweEnvironment({ config: { taskFileRoots: [tasks] } });
    cases.push(
      [
        'SWE',
        'a row file outside the roots',
        () => swe.loadTask('/etc/openclaw-row.json'),
        /not inside swe\.taskFileRoots/,
      ],
      ['SWE', 'a malformed row', () => swe.loadTask(`${join(tasks, 'rows.jsonl')}#x`), /rows\.jsonl/],
    );
    for (const [loader, name, load, names] of cases) {
      const error = await load().then(
        () => null,
        (thrown: unknown) => thrown as Error,
      );
      expect(error, `${loader}: ${name} was accepted`).toBeInstanceOf(Error);
      expect(error?.message, `${loader}: ${name}`).toMatch(names);
      outcomes.push({ group: `hostile task files (${loader})`, name, ended: `refused: ${error?.name}` });
    }
  });

  it('records an exclusion (or the vote it can read) when the judge answers gibberish', async () => {
    const cases = Object.keys(JUDGE_GIBBERISH);
    const firstTurns = await Promise.all(
      cases.map(async (name) => {
        const id = `judge-${name}-${process.pid}`;
        const opening = [{ role: 'user', content: 'Tell me something.' }];
        const first = await post(chat(opening), { 'x-session-id': id });
        const reply = (first.json?.choices as { message: { content: string } }[] | undefined)?.[0]?.message
          .content;
        const next = [
          ...opening,
          { role: 'assistant', content: reply },
          { role: 'user', content: `case:${name}` },
        ];
        expect((await post(chat(next), { 'x-session-id': id, 'x-session-done': 'true' })).status).toBe(200);
        const [turn] = await recordedTurns(store, scoped(id));
        if (!turn) throw new Error(`${name}: no turn recorded`);
        return { name, sampleId: turn.sampleId };
      }),
    );
    await expect
      .poll(
        async () => {
          let settled = 0;
          for (const { sampleId } of firstTurns)
            if ((await store.get(exclusionKey(sampleId))) || (await store.get(sampleKey(sampleId))))
              settled++;
          return settled;
        },
        { timeout: 120_000, interval: 500 },
      )
      .toBe(cases.length);
    for (const { name, sampleId } of firstTurns) {
      const exclusion = await store.get<SampleExclusion>(exclusionKey(sampleId));
      const sample = await store.get<TrainingSample>(sampleKey(sampleId));
      outcomes.push({
        group: 'judge gibberish',
        name,
        ended: exclusion ? `excluded: ${exclusion.reason}` : `sample: reward ${sample?.reward}`,
      });
    }
    expect(outcomes.filter((o) => o.group === 'judge gibberish' && o.ended.startsWith('sample'))).toEqual([
      { group: 'judge gibberish', name: 'last-box-wins', ended: 'sample: reward 1' },
    ]);
  }, 180_000);

  it('lost nothing it had accepted, still serves, and writes its figures', async () => {
    expect(gateway.child.exitCode).toBeNull();
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(JSON.stringify(await recordedTurns(store, scoped(baseline.id)))).toBe(before);
    // The conversation goes on where it was.
    expect((await post(chat(baseline.messages), { 'x-session-id': baseline.id })).status).toBe(200);
    const turns = await recordedTurns(store, scoped(baseline.id));
    expect(turns).toHaveLength(3);
    expect(turns[2]?.continues?.sampleId).toBe(turns[1]?.sampleId);
    await expect
      .poll(
        async () => {
          const signals = await sessionSignals(env.client, scopedSessionId(TENANT, baseline.id));
          return signals.filter((s) => s.name === 'turnRecorded').length;
        },
        { timeout: 30_000 },
      )
      .toBe(3);
    expect(sessionWorkflowId(scoped(baseline.id))).toContain(baseline.id);

    const groups = new Map<string, Map<string, number>>();
    for (const { group, ended } of outcomes) {
      const kind = ended.replace(/ \(.*\)$/, '');
      const counts = groups.get(group) ?? new Map<string, number>();
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      groups.set(group, counts);
    }
    const rows = [...groups].map(([group, counts]) => ({
      group,
      cases: [...counts.values()].reduce((a, b) => a + b, 0),
      ended: [...counts].map(([kind, n]) => `${kind} × ${n}`).join(', '),
    }));
    await mkdir(join(FIGURES, '..'), { recursive: true });
    await writeFile(
      FIGURES,
      `${JSON.stringify({ cases: outcomes.length, groups: rows, outcomes }, null, 2)}\n`,
    );
    console.log(
      [
        `bad input: ${outcomes.length} cases; none answered 5xx, none lost an accepted turn (${FIGURES})`,
        '| group | cases | how they ended |',
        '|---|---|---|',
        ...rows.map((row) => `| ${row.group} | ${row.cases} | ${row.ended} |`),
      ].join('\n'),
    );
    expect(outcomes.length).toBeGreaterThan(80);
  });
});
