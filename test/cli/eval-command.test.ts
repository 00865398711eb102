// `openclaw-rl eval` against a real reference engine on a tiny model, with the FAKE judge voting by the next
// message ("thanks" → 1, "wrong" → -1, anything else → 0).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { formatEvalReport, readEvalConversations, runEval } from '../../cli/eval-command.js';
import { makeTinyModel } from '../../engines/reference-engine-process.js';
import { arithProblem } from '../../environments/arith/problems.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { scriptsByTask, startScriptedPolicy } from '../support/scripted-policy-server.js';
import { connectTestEnvironment, testPayloadKeysEnv, uniqueTaskQueue } from '../support/temporal.js';
import { startTrack2 } from '../track2/track2-harness.js';
import { BAR_CHARACTERS, lastFrame, recordingStreamDouble } from './terminal-stream-double.js';

const conversation = (id: string, question: string, nextUser: string) =>
  JSON.stringify({
    id,
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: question },
    ],
    next_user: nextUser,
  });

describe('openclaw-rl eval', () => {
  let dir: string;
  let model: string;
  let judge: FakeJudge;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'openclaw-eval-'));
    model = await makeTinyModel(join(dir, 'model'));
    judge = await startFakeJudge();
  }, 120_000);

  afterAll(async () => {
    await judge?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers held-out conversations with the model and scores them with the judge votes', async () => {
    const file = join(dir, 'heldout.jsonl');
    await writeFile(
      file,
      [
        conversation('weather', 'What is the weather like?', 'Great, thanks!'),
        conversation('sum', 'What is 2 + 2?', 'That is wrong, it is 4.'),
        '',
        conversation('topic', 'Tell me about boats.', 'Now tell me about trains.'),
      ].join('\n'),
    );
    const stderr = recordingStreamDouble(true);
    const report = await runEval(
      { model, conversations: file, judgeUrl: judge.url, votes: '3', maxTokens: '8' },
      {},
      stderr.stream,
    );
    expect(report.items.map((i) => [i.id, i.score])).toEqual([
      ['weather', 1],
      ['sum', -1],
      ['topic', 0],
    ]);
    expect(report.meanScore).toBe(0);
    expect(judge.calls).toBe(9);
    const table = formatEvalReport(report);
    expect(table).toMatch(/conversation\s+weather\s+1\s+majority/);
    expect(table).toContain('mean score 0.000 over 3 of 3 items');
    // The bar on the terminal: conversations judged, with the running mean (1, then (1 - 1) / 2 = 0).
    expect(stderr.text()).toContain('0/3 judged | mean score -');
    expect(lastFrame(stderr.text())).toMatch(/^conversations \|[█░]+\| 3\/3 judged \| mean score 0\.000$/);
  }, 120_000);

  it('reports bad lines with their number', async () => {
    const file = join(dir, 'bad.jsonl');
    await writeFile(file, `${conversation('ok', 'hi', 'thanks')}\n{"messages": []}\n`);
    await expect(readEvalConversations(file)).rejects.toThrow(/bad\.jsonl:2: .*messages/);
  });

  it('says what environment tasks need instead of waiting for workers that are not there', async () => {
    await expect(
      runEval({ engineUrl: 'http://127.0.0.1:9', env: 'arith', tasks: 'a,b' }, {}),
    ).rejects.toThrow(/--temporal-address/);
    await expect(
      runEval(
        {
          engineUrl: 'http://127.0.0.1:9',
          env: 'arith',
          tasks: 'a,b',
          temporalAddress: inject('temporalAddress'),
          taskQueue: uniqueTaskQueue('eval'),
          envQueue: uniqueTaskQueue('eval-env'),
        },
        { TEMPORAL_NAMESPACE: inject('temporalNamespace'), ...testPayloadKeysEnv() },
      ),
    ).rejects.toThrow(/needs a control worker .* and an env worker/);
  }, 30_000);

  it('rolls out environment tasks through Temporal and scores their rewards', async () => {
    const env = await connectTestEnvironment();
    // The scripted policy (a test double) submits the right answer to arith-0 and a wrong one to arith-1.
    const policy = await startScriptedPolicy(
      scriptsByTask({
        [arithProblem(0).question]: [
          { toolCalls: [{ name: 'submit', arguments: { answer: arithProblem(0).answer } }] },
        ],
        [arithProblem(1).question]: [
          { toolCalls: [{ name: 'submit', arguments: { answer: arithProblem(1).answer + 5 } }] },
        ],
      }),
    );
    const t2 = await startTrack2(env);
    try {
      await t2.startEnvHost({ hostId: `eval-host-${process.pid}` });
      // --json: no bar even on a terminal.
      const stderr = recordingStreamDouble(true);
      const report = await runEval(
        {
          json: true,
          engineUrl: policy.url,
          env: 'arith',
          tasks: 'arith-0,arith-1',
          temporalAddress: inject('temporalAddress'),
          taskQueue: t2.workflowQueue,
          envQueue: t2.envQueue,
          maxTurns: '3',
        },
        { TEMPORAL_NAMESPACE: inject('temporalNamespace'), ...testPayloadKeysEnv() },
        stderr.stream,
      );
      expect(stderr.text()).toBe('');
      expect(JSON.stringify(report)).not.toMatch(BAR_CHARACTERS);
      expect(report.items.map((i) => [i.kind, i.id, i.score])).toEqual([
        ['task', 'arith-0', 1],
        ['task', 'arith-1', 0],
      ]);
      expect(report.meanScore).toBe(0.5);
    } finally {
      await t2.close();
      await policy.close();
      await env.teardown();
    }
  }, 60_000);
});
