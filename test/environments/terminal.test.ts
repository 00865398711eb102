// The terminal environment driven by scripted tool calls (no model) in real containers: every bundled task's
// reference solution earns +1, doing nothing −1, partial solutions the exact fraction in between; plus the
// tools' behaviour. Needs openclaw/sandbox-terminal (built here if missing) and builds the image of the task
// that brings a Dockerfile.

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import type { EnvTask, ToolCallAction } from '../../environments/environment.js';
import type { Sandbox } from '../../environments/sandbox.js';
import { TerminalEnvironment } from '../../environments/terminal/terminal-environment.js';
import { TERMINAL_EPISODE_FILE } from '../../environments/terminal/terminal-episode-state.js';
import type { TerminalTaskData } from '../../environments/terminal/terminal-tasks.js';
import { describeEnvironmentContract } from '../contracts/environment-contract.js';
import { ensureImage, eventually, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';

const ids = rolloutIds('terminal');
const provider = new DockerSandboxProvider();
const environment = new TerminalEnvironment({
  config: {
    limits: { memoryBytes: 512 * 1024 * 1024, cpus: 1, pids: 128 },
    commandTimeoutMs: 10_000,
    maxOutputChars: 200,
  },
});
const TASKS = ['crontab-schedule', 'csv-summary', 'fix-backup-script', 'git-first-commit', 'rename-photos'];

beforeAll(async () => {
  await ensureImage('openclaw/sandbox-terminal');
  // Loading the task builds its image from its Dockerfile (on openclaw/sandbox-terminal).
  await environment.loadTask('fix-backup-script');
}, IMAGE_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await ids.removeAll();
  expect(await ids.leftovers()).toEqual([]);
});

interface Episode {
  task: EnvTask<TerminalTaskData>;
  rolloutId: string;
  sandbox: Sandbox;
  call(name: string, args: Record<string, unknown>, id?: string): Promise<string>;
  evaluate(): ReturnType<TerminalEnvironment['evaluate']>;
}

async function startEpisode(taskId: string): Promise<Episode> {
  const task = await environment.loadTask(taskId);
  const rolloutId = ids.next(task.data.name);
  const { sandbox } = await provider.acquire(environment.sandboxSpec(task), rolloutId, 10 * 60_000);
  await environment.reset({ task, sandbox });
  let calls = 0;
  return {
    task,
    rolloutId,
    sandbox,
    async call(name, args, id) {
      calls += 1;
      const action: ToolCallAction = { id: id ?? `call-${calls}`, name, arguments: args };
      return (await environment.step({ task, sandbox }, action)).observation;
    },
    evaluate: () => environment.evaluate({ task, sandbox }, 'Done.'),
  };
}

const exec = (episode: Episode, command: string) => episode.call('shell_exec', { command });

/** Plays the task's solution.sh as a policy would: write it with the file tool, run it with shell_exec. */
async function playSolution(episode: Episode): Promise<void> {
  const solution = await readFile(join(episode.task.data.folder, 'solution.sh'), 'utf8');
  expect(
    await episode.call('shell_write_content_to_file', { file_path: '/tmp/solution.sh', content: solution }),
  ).toMatch(/^Wrote \d+ bytes to \/tmp\/solution.sh$/);
  expect(await exec(episode, 'bash /tmp/solution.sh')).toMatch(/\[exit code: 0\]$/);
}

describe('terminal environment: bundled tasks', () => {
  it.each(TASKS)('%s: its solution.sh through the tools → +1', async (name) => {
    const episode = await startEpisode(name);
    await playSolution(episode);
    const evaluation = await episode.evaluate();
    expect(evaluation.detail).toMatch(/^(\d+)\/\1 tests passed \(run-tests.sh exit code 0\); 2 tool calls$/);
    expect(evaluation.reward).toBe(1);
  });

  it('doing nothing → -1 on every task', async () => {
    const evaluations = await Promise.all(TASKS.map(async (name) => (await startEpisode(name)).evaluate()));
    for (const evaluation of evaluations) {
      expect(evaluation.detail).toMatch(/^0\/\d+ tests passed \(run-tests.sh exit code 1\); failing: /);
      expect(evaluation.reward).toBe(-1);
    }
  });

  it('partial solutions get the exact pass fraction: 1/4 → -0.5, 3/4 → 0.5, 3/6 → 0', async () => {
    // Only the missing mkdir fixed: the name with a space still breaks the loop, so a.txt and c.txt are copied.
    const backup = await startEpisode('fix-backup-script');
    const mkdirOnly = `sed -i 's|^count=0$|mkdir -p "$DEST"\\ncount=0|' /app/backup.sh && bash /app/backup.sh`;
    expect(await exec(backup, mkdirOnly)).toMatch(/cannot stat '\/app\/data\/my'[\s\S]*\[exit code: 1\]$/);
    const backupResult = await backup.evaluate();
    expect(backupResult.detail).toMatch(
      /^1\/4 tests passed .*failing: test_script_exits_zero \(FAILED\), test_copies_file_with_space \(FAILED\), test_reports_count \(FAILED\)/,
    );
    expect(backupResult.reward).toBe(-0.5);

    // Everything but the feature branch.
    const git = await startEpisode('git-first-commit');
    const solution = await readFile(join(git.task.data.folder, 'solution.sh'), 'utf8');
    await exec(git, solution.replace('git branch feature', ''));
    expect(await git.evaluate()).toMatchObject({ reward: 0.5 });

    // The crontab without its scripts.
    const cron = await startEpisode('crontab-schedule');
    await cron.call('shell_write_content_to_file', {
      file_path: '/home/agent/crontab.txt',
      content:
        '30 2 * * * /home/agent/bin/backup.sh\n0 4 * * mon /home/agent/bin/cleanup.sh\n*/15 * * * * /home/agent/bin/ping.sh\n',
    });
    const cronResult = await cron.evaluate();
    expect(cronResult.detail).toMatch(/^3\/6 tests passed/);
    expect(cronResult.reward).toBe(0);
  });
});

describe('terminal environment: episode and tools', () => {
  it('opens with the task name and instruction, ran setup.sh, and hides the tests until evaluation', async () => {
    const task = await environment.loadTask('rename-photos');
    const { sandbox } = await provider.acquire(
      environment.sandboxSpec(task),
      ids.next('opening'),
      10 * 60_000,
    );
    const opening = await environment.reset({ task, sandbox });
    expect(opening.tools.map((tool) => tool.function.name)).toEqual([
      'shell_exec',
      'shell_view',
      'shell_write_to_process',
      'shell_write_content_to_file',
    ]);
    expect(opening.messages[0]?.role).toBe('system');
    expect(opening.messages[1]).toEqual({
      role: 'user',
      content: `Task name:rename-photos\nTask instruction: ${task.data.instruction}`,
    });
    const episode = { task, sandbox };
    const step = (command: string) =>
      environment.step(episode, { id: command, name: 'shell_exec', arguments: { command } });
    expect((await step('whoami; stat -c %U /home/agent/photos/IMG_0001.JPG')).observation).toBe(
      'agent\nagent\n[exit code: 0]',
    );
    expect((await step('ls /tests')).observation).toMatch(/No such file or directory\n\[exit code: 2\]$/);
  });

  it('shell_exec: exit codes, stderr in order, timeouts, head/tail clipping', async () => {
    const episode = await startEpisode('csv-summary');
    expect(await exec(episode, 'echo out; echo err >&2; echo out2; exit 3')).toBe(
      'out\nerr\nout2\n[exit code: 3]',
    );
    expect(await exec(episode, 'true')).toBe('[exit code: 0]');
    expect(await exec(episode, 'cd /tmp && pwd')).toBe('/tmp\n[exit code: 0]');
    expect(await exec(episode, 'pwd')).toBe('/home/agent\n[exit code: 0]'); // a fresh shell each call
    const started = Date.now();
    expect(await episode.call('shell_exec', { command: 'echo started; sleep 30', timeout: 1 })).toBe(
      'started\n[command timed out after 1 s and was killed]',
    );
    expect(Date.now() - started).toBeLessThan(8_000);
    const long = await exec(episode, 'seq 1 1000');
    expect(long.startsWith('1\n2\n3\n')).toBe(true);
    expect(long).toMatch(/\n\[\.\.\. 3692 characters cut \.\.\.\]\n/);
    expect(long.endsWith('999\n1000\n[exit code: 0]')).toBe(true);
    expect(
      await exec(
        episode,
        'head -c 300 /dev/zero | wc -c; ping -c1 -W1 1.1.1.1 >/dev/null 2>&1 || echo offline',
      ),
    ).toBe('300\noffline\n[exit code: 0]');
  });

  it('tool errors: unknown tool, bad arguments, a file the agent may not write', async () => {
    const episode = await startEpisode('csv-summary');
    expect(await episode.call('shell_kill_process', { id: 'x' })).toBe(
      '[TOOL_ERROR] unknown tool: shell_kill_process',
    );
    expect(await episode.call('shell_exec', {})).toBe(
      '[TOOL_ERROR] shell_exec: ValueError: "command" must be a non-empty string',
    );
    expect(await episode.call('shell_exec', { command: 'ls', timeout: 'soon' })).toMatch(
      /^\[TOOL_ERROR\] shell_exec: ValueError: "timeout" must be a positive number/,
    );
    expect(await episode.call('shell_write_content_to_file', { file_path: 'rel.txt', content: 'x' })).toBe(
      '[TOOL_ERROR] shell_write_content_to_file: ValueError: "file_path" must be an absolute path',
    );
    expect(
      await episode.call('shell_write_content_to_file', { file_path: '/etc/passwd', content: 'x' }),
    ).toMatch(
      /^\[TOOL_ERROR\] shell_write_content_to_file: Error: could not write \/etc\/passwd: .*Permission denied/,
    );
    expect(
      await episode.call('shell_write_content_to_file', { file_path: TERMINAL_EPISODE_FILE, content: '{}' }),
    ).toMatch(/Permission denied/);
    const content = 'line "one"\n$HOME `two`\n';
    await episode.call('shell_write_content_to_file', { file_path: '/home/agent/new/dir/f.txt', content });
    expect(await exec(episode, 'cat /home/agent/new/dir/f.txt')).toBe(`${content}[exit code: 0]`);
  });

  it('background processes: start, view, type into; a restarted worker carries on with them', async () => {
    const episode = await startEpisode('csv-summary');
    const loop = 'echo ready; while read -r line; do echo "got $line"; [ "$line" = quit ] && exit 7; done';
    expect(await episode.call('shell_exec', { command: loop, block: false, id: 'echo' })).toBe(
      'ready\n[process echo is still running]',
    );
    expect(await episode.call('shell_exec', { command: 'sleep 1', block: false, id: 'echo' })).toMatch(
      /^\[TOOL_ERROR\] shell_exec: ValueError: a process with id echo is still running/,
    );
    expect(await episode.call('shell_write_to_process', { id: 'echo', command: 'hello' })).toMatch(
      /^ready\n(got hello\n)?\[process echo is still running\]$/,
    );
    // A blocking command in between does not disturb it.
    expect(await exec(episode, 'ps -eo args | grep -c "[o]penclaw-shell/echo/cmd"')).toBe(
      '1\n[exit code: 0]',
    );

    // Another worker (a fresh environment object) finds the process in the container.
    const restarted = new TerminalEnvironment();
    let calls = 0;
    const call = async (name: string, args: Record<string, unknown>) =>
      (await restarted.step(episode, { id: `restarted-${++calls}`, name, arguments: args })).observation;
    const view = () => call('shell_view', { id: 'echo' });
    expect(await eventually(async () => (await view()).includes('got hello'), 10_000)).toBe(true);
    await call('shell_write_to_process', { id: 'echo', command: 'quit' });
    expect(await eventually(async () => (await view()).endsWith('exited with code 7]'), 10_000)).toBe(true);
    expect(await view()).toBe('ready\ngot hello\ngot quit\n[process echo exited with code 7]');
    expect(await call('shell_write_to_process', { id: 'echo', command: 'more' })).toBe(
      '[TOOL_ERROR] shell_write_to_process: ValueError: process echo is not running',
    );
    expect(await call('shell_view', { id: 'nope' })).toBe(
      '[TOOL_ERROR] shell_view: ValueError: no process with id nope',
    );
    expect(await call('shell_view', { id: '../x' })).toMatch(
      /^\[TOOL_ERROR\] shell_view: ValueError: "id" must be/,
    );
    // The id is free again once the process ended.
    expect(await call('shell_exec', { command: 'echo again', block: false, id: 'echo' })).toBe(
      'again\n[process echo exited with code 0]',
    );
  });

  it('a retried step returns its recorded observation; another worker continues the episode', async () => {
    const episode = await startEpisode('csv-summary');
    const append = { command: 'echo x >> /home/agent/runs.txt; wc -l < /home/agent/runs.txt' };
    expect(await episode.call('shell_exec', append, 'call-a')).toBe('1\n[exit code: 0]');
    expect(await episode.call('shell_exec', append, 'call-a')).toBe('1\n[exit code: 0]'); // not run again
    expect(await episode.call('shell_exec', append, 'call-b')).toBe('2\n[exit code: 0]');

    // A fresh environment and provider, as in a restarted worker, find the episode by its rollout id.
    const restarted = new TerminalEnvironment();
    const sandbox = await new DockerSandboxProvider().attach(episode.rolloutId);
    expect(sandbox?.id).toBe(episode.sandbox.id);
    if (sandbox === null) throw new Error('unreachable');
    const evaluation = await restarted.evaluate(
      { task: await restarted.loadTask('csv-summary'), sandbox },
      null,
    );
    expect(evaluation.detail).toMatch(/^0\/4 tests passed .*; 2 tool calls$/);
    const other = await restarted.loadTask('git-first-commit');
    await expect(restarted.evaluate({ task: other, sandbox }, null)).rejects.toThrow(
      /holds an episode of task .*csv-summary, not .*git-first-commit/,
    );
  });
});

describe('terminal environment: a task folder of ones own', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'terminal-own-'));
    const task = async (name: string, files: Record<string, string>) => {
      await mkdir(join(dir, name), { recursive: true });
      for (const [path, content] of Object.entries(files)) await writeFile(join(dir, name, path), content);
    };
    await task('root-setup', {
      'task.yaml': 'instruction: Read /etc/greeting.\nsetup_user: root\n',
      'setup.sh': 'echo hello > /etc/greeting\n',
      'run-tests.sh': 'echo "pytest is not used here"; exit 2\n',
    });
    await task('slow-tests', {
      'task.yaml': 'instruction: Nothing to do.\nmax_test_timeout_sec: 0.25\n',
      'run-tests.sh': 'echo starting; sleep 30\n',
    });
    await task('failing-setup', {
      'task.yaml': 'instruction: Never starts.\n',
      'setup.sh': 'echo broken >&2; exit 4\n',
      'run-tests.sh': '',
    });
  });

  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('runs setup.sh as root when asked; no pytest summary scores -1 and says why', async () => {
    const episode = await startEpisode(join(dir, 'root-setup'));
    expect(episode.task.id).toBe(join(dir, 'root-setup'));
    expect(await exec(episode, 'cat /etc/greeting; stat -c %U /etc/greeting')).toBe(
      'hello\nroot\n[exit code: 0]',
    );
    const evaluation = await episode.evaluate();
    expect(evaluation.reward).toBe(-1);
    expect(evaluation.detail).toMatch(
      /^no pytest results parsed from run-tests.sh \(exit code 2\); .*Output tail: pytest is not used here; 1 tool calls$/,
    );
  });

  it('stops the tests at min(600, 4 · max_test_timeout_sec) s', async () => {
    const episode = await startEpisode(join(dir, 'slow-tests'));
    const started = Date.now();
    const evaluation = await episode.evaluate();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(evaluation.reward).toBe(-1);
    expect(evaluation.detail).toMatch(
      /^no pytest results parsed from run-tests.sh \(timed out after 1 s\).*starting/,
    );
  });

  it('a failing setup.sh fails the reset with its output', async () => {
    await expect(startEpisode(join(dir, 'failing-setup'))).rejects.toThrow(
      /setup.sh of terminal task failing-setup failed with exit code 4: broken/,
    );
  });
});

describeEnvironmentContract(
  'terminal (sandbox containers)',
  async () => {
    const task = await environment.loadTask('csv-summary');
    const solution = await readFile(join(task.data.folder, 'solution.sh'), 'utf8');
    return {
      environment,
      taskId: task.id,
      solved: {
        actions: [
          {
            name: 'shell_write_content_to_file',
            arguments: { file_path: '/tmp/solution.sh', content: solution },
          },
          { name: 'shell_exec', arguments: { command: 'bash /tmp/solution.sh' } },
        ],
        finalAnswer: 'Done.',
      },
      unsolved: { actions: [{ name: 'shell_exec', arguments: { command: 'true' } }], finalAnswer: 'Done.' },
      sandboxes: { provider, rolloutId: (label) => ids.next(label) },
    };
  },
  180_000,
);
