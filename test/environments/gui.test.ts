// The gui environment driven by scripted actions (no model) in real desktop containers: for each bundled task
// a known-good action sequence scores +1 and a known-bad one −1; screenshots are real PNGs of the screen.
// Needs the image openclaw/sandbox-desktop (built here when missing).

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import type { EpisodeStep, StepResult, ToolCallAction } from '../../environments/environment.js';
import { GuiEnvironment } from '../../environments/gui/gui-environment.js';
import { describeEnvironmentContract } from '../contracts/environment-contract.js';
import { ensureImage, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';
import { pngSize } from './gui-png-size.js';
import { KNOWN_BAD, KNOWN_GOOD } from './gui-scripts.js';

const ids = rolloutIds('gui');
const provider = new DockerSandboxProvider();
// Task files written by the cases below live under the temporary folder.
const environment = new GuiEnvironment({ config: { settleMs: 300, taskFileRoots: [tmpdir()] } });

beforeAll(() => ensureImage('openclaw/sandbox-desktop'), IMAGE_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await ids.removeAll();
  expect(await ids.leftovers()).toEqual([]);
});

interface PlayedEpisode {
  opening: string;
  results: StepResult[];
  reward: number;
  detail: string;
}

/** Resets the task in a fresh container, plays the arguments as computer_use calls, evaluates, releases. */
async function play(
  taskId: string,
  script: readonly Record<string, unknown>[],
  env: GuiEnvironment = environment,
): Promise<PlayedEpisode> {
  const task = await env.loadTask(taskId);
  const rolloutId = ids.next(task.data.task.id);
  const { sandbox } = await provider.acquire(env.sandboxSpec(task), rolloutId, 10 * 60_000);
  try {
    const reset = await env.reset({ task, sandbox });
    const parts = reset.messages.at(-1)?.content as { type: string; image_url?: { url: string } }[];
    const opening = parts.find((part) => part.type === 'image_url')?.image_url?.url ?? '';
    const history: EpisodeStep[] = [];
    const results: StepResult[] = [];
    for (const [index, args] of script.entries()) {
      const action: ToolCallAction = { id: `call-${index}`, name: 'computer_use', arguments: args };
      const result = await env.step({ task, sandbox, history }, action);
      history.push({ action, observation: result.observation });
      results.push(result);
      if (result.done) break;
    }
    const evaluation = await env.evaluate({ task, sandbox, history }, null);
    return { opening, results, ...evaluation };
  } finally {
    await provider.release(rolloutId);
  }
}

function expectPng(url: string | undefined): { width: number; height: number; bytes: number } {
  expect(url).toMatch(/^data:image\/png;base64,/);
  const png = Buffer.from(String(url).slice('data:image/png;base64,'.length), 'base64');
  return { ...pngSize(png), bytes: png.length };
}

describe('gui environment in desktop containers', () => {
  it('xterm-create-file: typing the command scores +1, a wrong text −1', async () => {
    const [good, bad] = await Promise.all([
      play('xterm-create-file', KNOWN_GOOD['xterm-create-file']),
      play('xterm-create-file', KNOWN_BAD['xterm-create-file']),
    ]);
    expect(good.detail).toMatch(/compare_text_file: 1/);
    expect(good.reward).toBe(1);
    expect(bad.reward).toBe(-1);
    expect(good.results.at(-1)).toEqual({ observation: 'ended the task (success)', done: true });
  }, 120_000);

  it('xclock-close: clicking the close button scores +1, clicking the clock face −1', async () => {
    const [good, bad] = await Promise.all([
      play('xclock-close', KNOWN_GOOD['xclock-close']),
      play('xclock-close', KNOWN_BAD['xclock-close']),
    ]);
    expect(good.detail).toMatch(/exact_match: 1 \(result "closed\\n"/);
    expect(good.reward).toBe(1);
    expect(bad.detail).toMatch(/result "open\\n"/);
    expect(bad.reward).toBe(-1);
  }, 120_000);

  it('xedit-save-note: type and Save scores +1, type without saving −1; screenshots follow the screen', async () => {
    const [good, bad] = await Promise.all([
      play('xedit-save-note', KNOWN_GOOD['xedit-save-note']),
      play('xedit-save-note', KNOWN_BAD['xedit-save-note']),
    ]);
    expect(good.reward).toBe(1);
    expect(bad.reward).toBe(-1);
    expect(bad.detail).toMatch(/check_include_exclude: 0/);

    // Scaled from 1280×800 to 1024 px wide; the typed text changes the picture, so the PNG.
    const opening = expectPng(good.opening);
    expect(opening).toMatchObject({ width: 1024, height: 640 });
    const typed = expectPng(good.results[1]?.images?.[0]);
    expect(typed).toMatchObject({ width: 1024, height: 640 });
    expect(typed.bytes).not.toBe(opening.bytes);
    expect(good.results[1]?.observation).toBe('typed "buy milk"');
  }, 120_000);

  it('gives up: terminate(failure) scores −1 even on a task whose state is right', async () => {
    const played = await play('xclock-close', [
      ...KNOWN_GOOD['xclock-close'].slice(0, -1),
      { action: 'terminate', status: 'failure' },
    ]);
    expect(played.reward).toBe(-1);
    expect(played.detail).toMatch(/terminated: failure/);
  }, 120_000);

  it('a retried reset does not launch again, a retried step does not act again', async () => {
    const task = await environment.loadTask('xedit-save-note');
    const rolloutId = ids.next('retries');
    const { sandbox } = await provider.acquire(environment.sandboxSpec(task), rolloutId, 10 * 60_000);
    try {
      await environment.reset({ task, sandbox });
      await environment.reset({ task, sandbox }); // e.g. the activity ran again after a worker died
      const windows = await sandbox.exec(['xdotool', 'search', '--onlyvisible', '--class', '^xedit$'], {
        timeoutMs: 10_000,
      });
      expect(windows.stdout.trim().split('\n')).toHaveLength(1);

      const click: ToolCallAction = {
        id: 'c0',
        name: 'computer_use',
        arguments: KNOWN_GOOD['xedit-save-note'][0] ?? {},
      };
      await environment.step({ task, sandbox }, click);
      const type: ToolCallAction = {
        id: 'c1',
        name: 'computer_use',
        arguments: { action: 'type', text: 'once' },
      };
      const first = await environment.step({ task, sandbox }, type);
      const again = await environment.step({ task, sandbox }, type);
      expect(again).toEqual(first);
      const save: ToolCallAction = {
        id: 'c2',
        name: 'computer_use',
        arguments: KNOWN_GOOD['xedit-save-note'][2] ?? {},
      };
      await environment.step({ task, sandbox }, save);
      const note = await sandbox.exec(['cat', '/home/agent/note.txt'], { timeoutMs: 10_000 });
      expect(note.stdout).toBe('once');

      const unknown = await environment.step({ task, sandbox }, { id: 'c3', name: 'shell', arguments: {} });
      expect(unknown.observation).toMatch(/^Error: unknown tool "shell"/);
      expect(unknown.images).toHaveLength(1);
      const invalid = await environment.step(
        { task, sandbox },
        { id: 'c4', name: 'computer_use', arguments: { action: 'left_click', coordinate: 'middle' } },
      );
      expect(invalid).toMatchObject({
        observation: expect.stringMatching(/^Error: invalid computer_use arguments: coordinate/),
        done: false,
      });
    } finally {
      await provider.release(rolloutId);
    }
  }, 120_000);

  it('a task file given by path: local files copied in, commands, postconfig, and a text comparison', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gui-task-'));
    try {
      await mkdir(join(dir, 'files'));
      await writeFile(join(dir, 'files', 'list.txt'), 'apples\npears\n');
      await writeFile(join(dir, 'files', 'sorted.txt'), 'APPLES\nPEARS\n');
      const path = join(dir, 'upper-case.json');
      await writeFile(
        path,
        JSON.stringify({
          id: 'upper-case',
          instruction: 'Nothing to do: the setup does it.',
          config: [
            {
              type: 'download',
              parameters: { files: [{ url: 'files/list.txt', path: '/home/agent/in/list.txt' }] },
            },
            {
              type: 'execute',
              parameters: { command: ['sh', '-c', 'tr a-z A-Z < ~/in/list.txt > ~/in/upper.txt'] },
            },
            { type: 'launch', parameters: { command: ['xlogo'] } },
          ],
          evaluator: {
            postconfig: [
              { type: 'command', parameters: { command: 'cp ~/in/upper.txt ~/in/checked.txt', shell: true } },
            ],
            func: ['compare_text_file', 'check_include_exclude'],
            result: [
              { type: 'vm_file', path: '/home/agent/in/checked.txt' },
              { type: 'vm_command_line', command: ['stat', '-c', '%U', '/home/agent/in/list.txt'] },
            ],
            expected: [
              { type: 'cloud_file', path: 'files/sorted.txt' },
              { type: 'rule', rules: { include: ['agent'], exclude: ['root'] } },
            ],
          },
        }),
      );
      const played = await play(path, [{ action: 'terminate', status: 'success' }]);
      expect(played.detail).toMatch(/compare_text_file: 1.*check_include_exclude: 1/);
      expect(played.reward).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describeEnvironmentContract(
  'gui (desktop containers)',
  async () => {
    const asCalls = (script: readonly Record<string, unknown>[]) =>
      script.map((args) => ({ name: 'computer_use', arguments: args }));
    return {
      environment,
      taskId: 'xterm-create-file',
      solved: { actions: asCalls(KNOWN_GOOD['xterm-create-file']), finalAnswer: null },
      unsolved: { actions: asCalls(KNOWN_BAD['xterm-create-file']), finalAnswer: null },
      sandboxes: { provider, rolloutId: (label) => ids.next(label) },
    };
  },
  180_000,
);
