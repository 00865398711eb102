import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agenticInputFromFlags,
  formatAgenticStatus,
  readAgenticStatus,
  watchAgenticRun,
} from '../../cli/agentic-commands.js';
import { parseEnvOptions } from '../../cli/env-worker-command.js';
import { formatRolloutResult, rolloutInputFromFlags, runRollout } from '../../cli/rollout-command.js';
import { registerTrack2Commands } from '../../cli/track2-commands.js';
import { arithProblem } from '../../environments/arith/problems.js';
import { agenticWorkflowId } from '../../temporal/workflow-ids.js';
import { startAgenticRun } from '../../temporal/workflow-starts.js';
import {
  type AgenticStatus,
  pauseAgenticUpdate,
  resumeAgenticUpdate,
  type StepSummary,
} from '../../workflows/agentic-signals.js';
import { type ScriptedTurn, startScriptedPolicy } from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const status = (overrides: Partial<AgenticStatus> = {}): AgenticStatus => ({
  runId: 'r1',
  env: 'arith',
  phase: 'rollouts',
  step: 0,
  steps: 2,
  stepsCompleted: 0,
  policyVersion: 0,
  paused: false,
  rollouts: { total: 8, done: 3, failed: 1, inFlight: 5, retried: 1 },
  meanReward: 0.5,
  lastStep: null,
  lastMetrics: null,
  ...overrides,
});

/** A stream double that records what was written; `tty` makes cli-progress draw a bar. */
function captureStream(tty: boolean) {
  const chunks: string[] = [];
  const stream = {
    isTTY: tty,
    columns: 120,
    write(chunk: string) {
      chunks.push(chunk);
      return true;
    },
    cursorTo: () => true,
    clearLine: () => true,
    moveCursor: () => true,
    clearScreenDown: () => true,
    on: () => stream,
    removeListener: () => stream,
  };
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => chunks.join('') };
}

describe('Track 2 CLI functions', () => {
  it('builds a validated rollout input from flags; a task that is a file becomes its full path', async () => {
    const input = rolloutInputFromFlags(
      { env: 'arith', task: 'arith-3', policyUrl: 'http://127.0.0.1:1' },
      36,
    );
    expect(input).toEqual({
      rolloutId: 'cli-arith-10',
      env: 'arith',
      taskId: 'arith-3',
      policy: { url: 'http://127.0.0.1:1' },
    });
    const dir = await mkdtemp(join(tmpdir(), 'cli-'));
    const file = join(dir, 'task.json');
    await writeFile(file, '{}');
    expect(
      rolloutInputFromFlags({
        env: 'arith',
        task: file,
        policyUrl: 'http://h:1',
        maxTurns: '3',
        mode: 'gateway',
      }),
    ).toMatchObject({ taskId: file, maxTurns: 3, policy: { mode: 'gateway' } });
    await rm(dir, { recursive: true });
    expect(() => rolloutInputFromFlags({ env: 'arith', task: 't', policyUrl: 'not a url' })).toThrow(
      /policy.url/,
    );
  });

  it('merges an --input object with flags and validates it', () => {
    const input = agenticInputFromFlags(
      { run: 'r2', tasks: 'arith-1,arith-2', samplesPerTask: '8', policyUrl: 'http://e:1' },
      { env: 'arith', steps: 3, policy: { url: 'http://old:1', mode: 'engine' } },
    );
    expect(input).toEqual({
      runId: 'r2',
      env: 'arith',
      steps: 3,
      taskIds: ['arith-1', 'arith-2'],
      samplesPerTask: 8,
      policy: { url: 'http://e:1', mode: 'engine' },
    });
    expect(
      agenticInputFromFlags({ run: 'r', env: 'arith', taskSet: '50', policyUrl: 'http://e:1' }).taskSet,
    ).toEqual({
      source: 'all',
      limit: 50,
    });
    expect(() =>
      agenticInputFromFlags({ run: 'r', env: 'arith', tasks: 'a', taskSet: 'all', policyUrl: 'http://e:1' }),
    ).toThrow(/exactly one of taskIds and taskSet/);
  });

  it("reads the kinds' options for worker env from JSON, with clear errors", () => {
    expect(parseEnvOptions(undefined)).toEqual({});
    expect(parseEnvOptions(' ')).toEqual({});
    expect(parseEnvOptions('{"swe": {"instancesFile": "rows.jsonl"}}')).toEqual({
      swe: { instancesFile: 'rows.jsonl' },
    });
    expect(() => parseEnvOptions('{swe')).toThrow(/--env-options is not valid JSON/);
    expect(() => parseEnvOptions('[1]')).toThrow(/must be a JSON object keyed by environment kind/);
  });

  it('formats results and status for people', () => {
    const text = formatRolloutResult({
      rolloutId: 'x',
      status: 'COMPLETED',
      reward: 1,
      steps: 2,
      sampleIds: [],
      containerIds: ['c1'],
      hostIds: ['h1'],
      parseErrors: 1,
      detail: 'final answer',
      stepScores: null,
    });
    expect(text).toContain('rollout x: COMPLETED');
    expect(text).toContain('steps       2 (1 parse errors)');
    expect(text).toContain('containers  c1');
    const summary: StepSummary = {
      step: 0,
      stepId: 'r1:step0',
      rollouts: 8,
      byStatus: { COMPLETED: 6, TRUNCATED: 1, FAILED: 1, ABORTED: 0 },
      retried: 1,
      groups: 2,
      groupsConstant: 1,
      groupsFailed: 0,
      samplesTrained: 4,
      meanReward: 0.25,
      policyVersion: 1,
      metrics: null,
    };
    const shown = formatAgenticStatus(status({ lastStep: summary }));
    expect(shown).toContain('rollouts        3/8 done, 1 failed, 5 in flight, 1 retried');
    expect(shown).toContain(
      'r1:step0: completed 6, truncated 1, failed 1, aborted 0; groups 2 (1 constant, 0 failed)',
    );
  });

  it('follows a run with a progress bar on a terminal and with lines elsewhere', async () => {
    const sequence = [
      status(),
      status({ rollouts: { total: 8, done: 8, failed: 1, inFlight: 0, retried: 1 } }),
      status({ phase: 'done', rollouts: { total: 8, done: 8, failed: 1, inFlight: 0, retried: 1 } }),
    ];
    for (const tty of [true, false]) {
      const reads = [...sequence];
      const { stream, text } = captureStream(tty);
      const last = await watchAgenticRun(async () => reads.shift() ?? status({ phase: 'done' }), {
        stream,
        intervalMs: 1,
      });
      expect(last.phase).toBe('done');
      if (tty) expect(text()).toMatch(/step 1\/2 \|[█░]+\| 8\/8 rollouts \| done/);
      else expect(text().split('\n').filter(Boolean)).toHaveLength(3);
    }
  });

  it('registers worker env, rollout and agentic start|status|pause|resume', () => {
    const program = new Command('openclaw-rl');
    program
      .command('worker')
      .argument('<queue>')
      .action(() => undefined);
    registerTrack2Commands(program);
    const names = (c: Command) => c.commands.map((s) => s.name());
    expect(names(program)).toEqual(['worker', 'rollout', 'agentic']);
    expect(names(program.commands[0] as Command)).toEqual(['env']);
    expect(names(program.commands[2] as Command)).toEqual(['start', 'status', 'pause', 'resume']);
  });
});

describe('Track 2 CLI against the real server', () => {
  let env: TestWorkflowEnvironment;
  let t2: Track2Harness;
  let policy: Awaited<ReturnType<typeof startScriptedPolicy>>;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    // Every task: submit the right answer.
    policy = await startScriptedPolicy(({ task }): ScriptedTurn | undefined => {
      for (let k = 0; k < 10; k++)
        if (task === arithProblem(k).question)
          return { toolCalls: [{ name: 'submit', arguments: { answer: arithProblem(k).answer } }] };
      return undefined;
    });
    t2 = await startTrack2(env);
    await t2.startEnvHost({ hostId: `cli-${process.pid}` });
  }, 120_000);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
  });

  it('runs a rollout', async () => {
    const input = rolloutInputFromFlags({
      env: 'arith',
      task: 'arith-1',
      policyUrl: policy.url,
      envQueue: t2.envQueue,
      rolloutId: `cli-${process.pid}-${Date.now().toString(36)}`,
    });
    const result = await runRollout(env.client, t2.workflowQueue, input);
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 1 });
  });

  it('starts a run once, pauses it between steps, resumes it', async () => {
    const runId = `cli-run-${process.pid}-${Date.now().toString(36)}`;
    const input = agenticInputFromFlags({
      run: runId,
      env: 'arith',
      tasks: 'arith-1,arith-2',
      samplesPerTask: '2',
      steps: '2',
      policyUrl: policy.url,
      envQueue: t2.envQueue,
    });
    input.training = { train: false };
    // Step 0's first policy answer waits until the pause has landed, so the pause falls inside step 0 on any
    // machine: a pause sent before step 0 began would hold step 0 itself (what a slow machine once saw).
    const held = policy.hold(() => true);
    expect(await startAgenticRun(env.client, t2.workflowQueue, input)).toBe('started');
    const handle = env.client.workflow.getHandle(agenticWorkflowId(runId));
    await held.reached;
    await handle.executeUpdate(pauseAgenticUpdate);
    held.release();
    expect(await startAgenticRun(env.client, t2.workflowQueue, input)).toBe('running');
    // The step in progress finishes; the next waits (after continue-as-new, still paused).
    const deadline = Date.now() + 30_000;
    let seen = await readAgenticStatus(env.client, runId);
    while (!(seen.stepsCompleted === 1 && seen.phase === 'paused') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      seen = await readAgenticStatus(env.client, runId).catch(() => seen);
    }
    expect(seen).toMatchObject({ stepsCompleted: 1, phase: 'paused', paused: true });
    expect(seen.lastStep?.byStatus.COMPLETED).toBe(4);
    await handle.executeUpdate(resumeAgenticUpdate);
    const summaries = (await handle.result()) as StepSummary[];
    expect(summaries.map((s) => s.rollouts)).toEqual([4, 4]);
    // Every group answered right: constant, dropped (the first kept), nothing trained with train: false.
    expect(summaries[0]).toMatchObject({ groupsConstant: 1, samplesTrained: 0, meanReward: 1 });
  }, 60_000);
});
