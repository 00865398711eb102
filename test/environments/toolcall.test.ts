// The toolcall environment driven by scripted actions (no model) in real sandbox containers.
// Needs the image openclaw/sandbox-python (`openclaw-rl images build`; .ci/run builds it).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import type { Environment, EnvTask, ToolCallAction } from '../../environments/environment.js';
import type { Sandbox } from '../../environments/sandbox.js';
import { EPISODE_STATE_FILE } from '../../environments/toolcall/episode-state.js';
import type { ToolcallConfigInput } from '../../environments/toolcall/toolcall-config.js';
import { ToolcallEnvironment } from '../../environments/toolcall/toolcall-environment.js';
import type { ToolcallTaskData } from '../../environments/toolcall/toolcall-tasks.js';
import { describeEnvironmentContract } from '../contracts/environment-contract.js';
import { ensureImage, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';

const ids = rolloutIds('toolcall');
const provider = new DockerSandboxProvider();
const TEST_CONFIG: ToolcallConfigInput = {
  limits: { memoryBytes: 256 * 1024 * 1024, cpus: 1, pids: 64 },
  pythonTimeoutMs: 2_000,
};
const SIX_BY_SEVEN = { id: 'six-by-seven', problem: 'What is 6 times 7?', answer: '42' };

beforeAll(() => ensureImage('openclaw/sandbox-python'), IMAGE_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await ids.removeAll();
  expect(await ids.leftovers()).toEqual([]);
});

interface Episode {
  environment: ToolcallEnvironment;
  task: EnvTask<ToolcallTaskData>;
  sandbox: Sandbox;
  rolloutId: string;
  call(code: unknown, id?: string, name?: string): ReturnType<ToolcallEnvironment['step']>;
}

/** Acquires a sandbox for the task as a rollout would, and resets the episode in it. */
async function startEpisode(taskId: string, config: ToolcallConfigInput = TEST_CONFIG): Promise<Episode> {
  const environment = new ToolcallEnvironment({ config, tasks: [SIX_BY_SEVEN, ...(await bundledTasks())] });
  const task = await environment.loadTask(taskId);
  const rolloutId = ids.next(taskId);
  const spec = environment.sandboxSpec(task);
  const { sandbox } = await provider.acquire(spec, rolloutId, 10 * 60_000);
  await environment.reset({ task, sandbox });
  let calls = 0;
  return {
    environment,
    task,
    sandbox,
    rolloutId,
    call(code, id, name = 'code_interpreter') {
      calls += 1;
      const action: ToolCallAction = { id: id ?? `call-${calls}`, name, arguments: { code } };
      return environment.step({ task, sandbox }, action);
    },
  };
}

async function bundledTasks() {
  const environment = new ToolcallEnvironment();
  const ids = await environment.listTasks();
  return Promise.all(
    ids.map(async (id) => {
      const task = await environment.loadTask(id);
      return { id, ...task.data };
    }),
  );
}

describe('toolcall environment', () => {
  it('is an Environment with the code_interpreter tool and the bundled tasks', async () => {
    const environment: Environment = new ToolcallEnvironment();
    expect(environment.kind).toBe('toolcall');
    const taskIds = await environment.listTasks();
    expect(taskIds.length).toBeGreaterThanOrEqual(20);
    const task = await environment.loadTask('telescoping-sum');
    expect(environment.sandboxSpec(task)).toMatchObject({
      image: 'openclaw/sandbox-python',
      network: false,
      user: 'agent',
    });
    await expect(environment.loadTask('no-such-task')).rejects.toThrow(/no toolcall task/);
  });

  it('rewards a good trajectory: code, then the right boxed answer', async () => {
    const episode = await startEpisode('six-by-seven');
    const opening = await episode.environment.reset({ task: episode.task, sandbox: episode.sandbox });
    expect(opening.tools.map((tool) => tool.function.name)).toEqual(['code_interpreter']);
    expect(opening.messages.at(-1)?.content).toContain('What is 6 times 7?');

    const step = await episode.call('print(6 * 7)');
    expect(step).toEqual({ observation: '42', done: false });
    const evaluation = await episode.environment.evaluate(
      { task: episode.task, sandbox: episode.sandbox },
      'The program printed 42.\n\nAnswer: \\boxed{42}',
    );
    expect(evaluation.reward).toBe(1);
    expect(evaluation.detail).toMatch(/answer 42 is correct.*1 tool calls/);
  });

  it('solves a bundled task with numpy/sympy code and a fraction answer', async () => {
    const episode = await startEpisode('telescoping-sum');
    const code =
      'from fractions import Fraction\nimport sympy\nprint(sum(Fraction(1, k * (k + 1)) for k in range(1, 100)))';
    expect((await episode.call(code)).observation).toBe('99/100');
    const evaluation = await episode.environment.evaluate(
      { task: episode.task, sandbox: episode.sandbox },
      'So the sum is \\boxed{\\dfrac{99}{100}}.',
    );
    expect(evaluation.reward).toBe(1);
  });

  it('scores a wrong answer by the rule: min(-0.6, -1 + (calls - 2) / 2 * 0.1)', async () => {
    const episode = await startEpisode('six-by-seven');
    await episode.call('print(6 + 7)');
    await episode.call('import numpy as np\nprint(np.add(6, 7))');
    await episode.call('print("still 13")');
    const context = { task: episode.task, sandbox: episode.sandbox };
    expect((await episode.environment.evaluate(context, 'Answer: \\boxed{13}')).reward).toBe(-0.95);
    expect((await episode.environment.evaluate(context, 'I do not know.')).reward).toBe(-0.95);
  });

  it('answers invalid tool calls with an error and does not count them', async () => {
    const episode = await startEpisode('six-by-seven');
    const unknown = await episode.call('print(1)', undefined, 'shell');
    expect(unknown).toEqual({
      observation: expect.stringMatching(/^Error: unknown tool "shell"/),
      done: false,
    });
    const noCode = await episode.call(42);
    expect(noCode.observation).toMatch(/^Error: code_interpreter needs a non-empty string argument "code"/);
    const blank = await episode.call('   ');
    expect(blank.done).toBe(false);
    const evaluation = await episode.environment.evaluate(
      { task: episode.task, sandbox: episode.sandbox },
      null,
    );
    expect(evaluation.detail).toMatch(/0 tool calls, 3 invalid/);
    expect(evaluation.reward).toBe(-1.1);
  });

  it('kills a runaway loop at the timeout and keeps going', async () => {
    const episode = await startEpisode('six-by-seven');
    const started = Date.now();
    const runaway = await episode.call('print("starting", flush=True)\nwhile True:\n    pass');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(runaway.observation).toBe('starting\nError: the program ran longer than 2 s and was stopped.');
    expect(runaway.done).toBe(false);
    expect((await episode.call('print("next")')).observation).toBe('next');
  });

  it('leaves nothing running after a call, not even a process in its own session', async () => {
    const episode = await startEpisode('six-by-seven');
    const daemon =
      'import subprocess\nsubprocess.Popen(["sleep", "1000"], start_new_session=True)\nprint("started")';
    expect((await episode.call(daemon)).observation).toBe('started');
    const processes = await episode.sandbox.exec(['sh', '-c', 'cat /proc/[0-9]*/comm'], {
      timeoutMs: 10_000,
    });
    expect(processes.stdout.split('\n')).not.toContain('sleep');
  });

  it('shows errors, truncates long output to 1024 characters, and hides nothing it must not', async () => {
    const episode = await startEpisode('six-by-seven');
    const failing = await episode.call('print("before")\n1 / 0');
    expect(failing.observation).toMatch(/^before\nTraceback[\s\S]*ZeroDivisionError: division by zero$/);
    const long = await episode.call('print("x" * 5000)');
    expect(long.observation).toBe(`${'x'.repeat(1024)}…`);
    expect((await episode.call('x = 1')).observation).toMatch(/no output/);
    const tamper = await episode.call(`open(${JSON.stringify(EPISODE_STATE_FILE)}, "w").write("{}")`);
    expect(tamper.observation).toMatch(/PermissionError/);
    const network = await episode.call('import socket\nsocket.create_connection(("1.1.1.1", 53), timeout=1)');
    expect(network.observation).toMatch(/OSError|unreachable/i);
  });

  it('a retried step returns the recorded result; another worker continues the episode', async () => {
    const episode = await startEpisode('six-by-seven');
    const counting = 'import os\nopen("runs.txt", "a").write("x")\nprint(os.path.getsize("runs.txt"))';
    expect((await episode.call(counting, 'call-a')).observation).toBe('1');
    expect((await episode.call(counting, 'call-a')).observation).toBe('1'); // the same call again: not re-run
    expect((await episode.call(counting, 'call-b')).observation).toBe('2');

    // A fresh environment and provider, as in a restarted worker, find the episode by its rollout id.
    const restarted = new ToolcallEnvironment({ config: TEST_CONFIG, tasks: [SIX_BY_SEVEN] });
    const sandbox = await new DockerSandboxProvider().attach(episode.rolloutId);
    expect(sandbox?.id).toBe(episode.sandbox.id);
    if (sandbox === null) throw new Error('unreachable');
    const evaluation = await restarted.evaluate({ task: episode.task, sandbox }, 'Answer: \\boxed{41}');
    expect(evaluation.detail).toMatch(/2 tool calls/);
    expect(evaluation.reward).toBe(-1);
  });

  it('ends the episode at the tool-call limit', async () => {
    const episode = await startEpisode('six-by-seven', { ...TEST_CONFIG, maxToolCalls: 2 });
    expect(await episode.call('print(1)')).toEqual({ observation: '1', done: false });
    expect(await episode.call('print(2)')).toEqual({ observation: '2', done: true });
    const over = await episode.call('print(3)');
    expect(over).toEqual({ observation: 'Error: the limit of 2 tool calls is reached.', done: true });
  });
});

describeEnvironmentContract(
  'toolcall (sandbox containers)',
  async () => ({
    environment: new ToolcallEnvironment({ config: TEST_CONFIG, tasks: [SIX_BY_SEVEN] }),
    taskId: SIX_BY_SEVEN.id,
    solved: {
      actions: [{ name: 'code_interpreter', arguments: { code: 'print(6 * 7)' } }],
      finalAnswer: 'The answer is \\boxed{42}.',
    },
    unsolved: {
      actions: [{ name: 'code_interpreter', arguments: { code: 'print(6 + 7)' } }],
      finalAnswer: 'The answer is \\boxed{13}.',
    },
    sandboxes: { provider, rolloutId: (label) => ids.next(label) },
  }),
  120_000,
);
