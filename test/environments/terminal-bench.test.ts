// Published terminal-bench task folders run as released (test/fixtures/terminal-bench/, copied unchanged):
// their own Dockerfile FROM ghcr.io/laude-institute/t-bench/python-3-13 (unreachable here, so built on the local
// equivalent openclaw/tbench-base), WORKDIR /app, their own run-tests.sh that installs uv with curl and runs
// `uv run pytest` (offline here: the equivalent image's uv and cached pytest), max_agent_timeout_sec. Each
// task's solution.sh played through the tools earns +1, doing nothing -1. Also terminal-bench's default
// run-tests.sh (a task without one), and task files that lead out of their folder. Real containers; the first
// run builds openclaw/tbench-base (about two minutes).

import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import type { EnvTask, ToolCallAction } from '../../environments/environment.js';
import type { Sandbox } from '../../environments/sandbox.js';
import { mapDockerfileBases, mappedBaseImage } from '../../environments/terminal/task-image.js';
import { DEFAULT_BASE_IMAGES } from '../../environments/terminal/terminal-config.js';
import { TerminalEnvironment } from '../../environments/terminal/terminal-environment.js';
import type { TerminalTaskData } from '../../environments/terminal/terminal-tasks.js';
import { ensureImage, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';

const PUBLISHED = fileURLToPath(new URL('../fixtures/terminal-bench/evoeval', import.meta.url));
const TASKS = ['0', '1', '2'];
const ids = rolloutIds('tbench');
const provider = new DockerSandboxProvider();
const limits = { memoryBytes: 512 * 1024 * 1024, cpus: 1, pids: 128 };
const published = new TerminalEnvironment({
  config: { tasksDir: PUBLISHED, limits, commandTimeoutMs: 30_000 },
});
let own: string;

beforeAll(async () => {
  await ensureImage('openclaw/tbench-base');
  own = await mkdtemp(join(tmpdir(), 'tbench-own-'));
}, IMAGE_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await ids.removeAll();
  expect(await ids.leftovers()).toEqual([]);
  if (own) await rm(own, { recursive: true, force: true });
});

interface Episode {
  task: EnvTask<TerminalTaskData>;
  sandbox: Sandbox;
  agentTimeoutMs: number | undefined;
  call(name: string, args: Record<string, unknown>): Promise<string>;
  evaluate(): ReturnType<TerminalEnvironment['evaluate']>;
}

async function startEpisode(environment: TerminalEnvironment, taskId: string): Promise<Episode> {
  const task = await environment.loadTask(taskId);
  const { sandbox } = await provider.acquire(
    environment.sandboxSpec(task),
    ids.next(task.data.name),
    600_000,
  );
  const opening = await environment.reset({ task, sandbox });
  let calls = 0;
  return {
    task,
    sandbox,
    agentTimeoutMs: opening.agentTimeoutMs,
    async call(name, args) {
      calls += 1;
      const action: ToolCallAction = { id: `call-${calls}`, name, arguments: args };
      return (await environment.step({ task, sandbox }, action)).observation;
    },
    evaluate: () => environment.evaluate({ task, sandbox }, 'Done.'),
  };
}

/** The task's solution.sh, as a policy would run it: written with the file tool, run with shell_exec. */
async function playSolution(episode: Episode): Promise<void> {
  const solution = await readFile(join(episode.task.data.folder, 'solution.sh'), 'utf8');
  await episode.call('shell_write_content_to_file', { file_path: '/tmp/solution.sh', content: solution });
  expect(await episode.call('shell_exec', { command: 'bash /tmp/solution.sh' })).toMatch(/\[exit code: 0\]$/);
}

describe('published terminal-bench tasks, as released', () => {
  it('maps the unreachable ghcr base images to the local equivalent, and nothing else', async () => {
    const released = await readFile(join(PUBLISHED, '0', 'Dockerfile'), 'utf8');
    const { dockerfile, mapped } = await mapDockerfileBases(released, async (image) =>
      mappedBaseImage(image, DEFAULT_BASE_IMAGES),
    );
    expect(mapped).toEqual({
      'ghcr.io/laude-institute/t-bench/python-3-13:20250620': 'openclaw/tbench-base',
    });
    expect(dockerfile).toContain('FROM openclaw/tbench-base\n');
    expect(dockerfile).toContain('WORKDIR /app');
    const staged = await mapDockerfileBases(
      'FROM --platform=linux/amd64 ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624 AS build\nFROM build\nFROM $BASE\n',
      async (image) => mappedBaseImage(image, DEFAULT_BASE_IMAGES),
    );
    expect(staged.dockerfile).toBe('FROM openclaw/tbench-base AS build\nFROM build\nFROM $BASE\n');
    expect(mappedBaseImage('ghcr.io/laude-institute/t-bench/deveval:latest', DEFAULT_BASE_IMAGES)).toBeNull();
  });

  it.each(TASKS)(
    'evoeval/%s: runs in /app as a non-root user, its solution.sh → +1',
    async (name) => {
      const episode = await startEpisode(published, name);
      expect(episode.task.data.maxAgentTimeoutSec).toBe(600);
      expect(episode.agentTimeoutMs).toBe(600_000);
      expect(await episode.call('shell_exec', { command: 'pwd; id -u' })).toMatch(
        /^\/app\n1000\n\[exit code: 0\]$/,
      );
      await playSolution(episode);
      const evaluation = await episode.evaluate();
      expect(evaluation.detail).toMatch(/^2\/2 tests passed \(run-tests.sh exit code 0\)/);
      expect(evaluation.reward).toBe(1);
    },
    180_000,
  );

  it('doing nothing → -1 on each', async () => {
    for (const name of TASKS) {
      const evaluation = await (await startEpisode(published, name)).evaluate();
      expect(evaluation.detail).toMatch(/^0\/2 tests passed/);
      expect(evaluation.reward).toBe(-1);
    }
  }, 240_000);

  it('a task without run-tests.sh gets terminal-bench’s default one and the offline uv/pytest runner', async () => {
    const folder = join(own, 'hello-world');
    await mkdir(join(folder, 'tests'), { recursive: true });
    await writeFile(
      join(folder, 'task.yaml'),
      'instruction: Write "Hello, world!" and a newline to hello.txt in the current directory.\nmax_agent_timeout_sec: 120\n',
    );
    await writeFile(
      join(folder, 'Dockerfile'),
      'FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624\n\nWORKDIR /app\n',
    );
    await writeFile(
      join(folder, 'tests', 'test_outputs.py'),
      'from pathlib import Path\n\n\ndef test_hello_file():\n    assert Path("/app/hello.txt").read_text() == "Hello, world!\\n"\n',
    );
    const environment = new TerminalEnvironment({ config: { tasksDir: own, limits } });
    const idle = await (await startEpisode(environment, 'hello-world')).evaluate();
    expect(idle).toMatchObject({ reward: -1 });
    const episode = await startEpisode(environment, 'hello-world');
    expect(episode.agentTimeoutMs).toBe(120_000);
    await episode.call('shell_exec', { command: "echo 'Hello, world!' > hello.txt" });
    const evaluation = await episode.evaluate();
    expect(evaluation.detail).toMatch(/^1\/1 tests passed/);
    expect(evaluation.reward).toBe(1);
    // The runner made its uv project in the working directory, as terminal-bench's does.
    expect(await episode.call('shell_exec', { command: 'ls /app' })).toContain('pyproject.toml');
  }, 240_000);

  it('a task file that leads out of the task folder is refused, naming it', async () => {
    const folder = join(own, 'leaky');
    await mkdir(join(folder, 'tests'), { recursive: true });
    await writeFile(join(folder, 'task.yaml'), 'instruction: nothing to do\n');
    await writeFile(join(folder, 'run-tests.sh'), 'python3 -m pytest -rA $TEST_DIR\n');
    await symlink('/etc/hostname', join(folder, 'tests', 'secret.txt'));
    const environment = new TerminalEnvironment({ config: { tasksDir: own, limits } });
    const episode = await startEpisode(environment, 'leaky');
    await expect(episode.evaluate()).rejects.toThrow(/tests\/secret\.txt.* is outside the task's folder/);
    await symlink('/etc/passwd', join(own, 'leaky', 'setup.sh'));
    await expect(environment.loadTask('leaky')).rejects.toThrow(/setup\.sh.* is outside the task's folder/);
  }, 120_000);
});
