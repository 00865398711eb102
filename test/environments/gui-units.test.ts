// The gui kind's parts that need no container: OSWorld task validation and loading, the computer_use action
// → xdotool mapping with its coordinate scaling, and the evaluator functions.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  COMPUTER_USE_TOOL,
  parseComputerUseAction,
  toPixel,
  xdotoolArgs,
  xdotoolKeysym,
} from '../../environments/gui/computer-use.js';
import {
  checkIncludeExclude,
  combineScores,
  compareTextFile,
  exactMatch,
  scoreCheck,
} from '../../environments/gui/evaluator-funcs.js';
import { finishedWith, GuiEnvironment } from '../../environments/gui/gui-environment.js';
import { scanGuiTasks } from '../../environments/gui/gui-tasks.js';
import { parseOsworldTask } from '../../environments/gui/osworld-task.js';
import { commandArgv, launchWindowPattern } from '../../environments/gui/task-setup.js';
import { createEnvironmentRegistry } from '../../environments/registry.js';

const SCREEN = { width: 1280, height: 800 };

/** A minimal valid task, overridable per test. */
const task = (extra: Record<string, unknown> = {}) => ({
  id: 'demo',
  snapshot: 'os',
  instruction: 'Do it.',
  source: 'test',
  config: [{ type: 'launch', parameters: { command: ['xclock'] } }],
  related_apps: ['xclock'],
  evaluator: {
    func: 'exact_match',
    result: { type: 'vm_command_line', command: 'echo hi', shell: true },
    expected: { type: 'rule', rules: { expected: 'hi\n' } },
  },
  ...extra,
});

describe('OSWorld task validation', () => {
  it('accepts the supported subset and normalises the evaluator into checks', () => {
    const parsed = parseOsworldTask(
      task({
        config: [
          { type: 'launch', parameters: { command: 'xterm -geometry 80x24', window: 'xterm' } },
          { type: 'execute', parameters: { command: ['touch', '/tmp/x'] } },
          { type: 'command', parameters: { command: 'true', shell: true } },
          { type: 'sleep', parameters: { seconds: 0.5 } },
          { type: 'download', parameters: { files: [{ url: 'files/a.txt', path: '/home/agent/a.txt' }] } },
          { type: 'activate_window', parameters: { window_name: 'xterm' } },
        ],
        evaluator: {
          func: ['exact_match', 'compare_text_file'],
          conj: 'or',
          result: [
            { type: 'vm_command_line', command: ['echo', 'hi'] },
            { type: 'vm_file', path: '/home/agent/a.txt', dest: 'a.txt' },
          ],
          expected: [
            { type: 'rule', rules: { expected: 'hi\n' } },
            { type: 'cloud_file', path: 'file:///tmp/a.txt', dest: 'a.txt' },
          ],
          options: [{}, { ignore_case: true }],
          postconfig: [{ type: 'sleep', parameters: { seconds: 1 } }],
        },
        trajectory: 'trajectories/', // OSWorld fields this project does not use are kept, not rejected
      }),
      'inline',
    );
    expect(parsed.config.map((step) => step.type)).toEqual([
      'launch',
      'execute',
      'command',
      'sleep',
      'download',
      'activate_window',
    ]);
    expect(parsed.evaluator.conj).toBe('or');
    expect(parsed.evaluator.postconfig).toEqual([{ type: 'sleep', parameters: { seconds: 1 } }]);
    expect(parsed.evaluator.checks).toEqual([
      {
        func: 'exact_match',
        result: { type: 'vm_command_line', command: ['echo', 'hi'] },
        expected: { type: 'rule', rules: { expected: 'hi\n' } },
        options: {},
      },
      {
        func: 'compare_text_file',
        result: { type: 'vm_file', path: '/home/agent/a.txt', dest: 'a.txt' },
        expected: { type: 'cloud_file', path: 'file:///tmp/a.txt', dest: 'a.txt' },
        options: { ignore_case: true },
      },
    ]);
  });

  it('rejects unsupported config types, getters and funcs with errors that name them', () => {
    expect(() =>
      parseOsworldTask(
        task({ config: [{ type: 'chrome_open_tabs', parameters: { urls_to_open: [] } }] }),
        't.json',
      ),
    ).toThrow(
      /invalid gui task t\.json:[\s\S]*config type "chrome_open_tabs" is not supported here \(supported: launch, /,
    );
    expect(() =>
      parseOsworldTask(
        task({
          evaluator: {
            func: 'compare_table',
            result: { type: 'vm_file', path: '/a' },
            expected: { type: 'rule', rules: {} },
          },
        }),
        't.json',
      ),
    ).toThrow(/evaluator func "compare_table" is not supported here/);
    expect(() =>
      parseOsworldTask(
        task({
          evaluator: {
            func: 'exact_match',
            result: { type: 'vm_screen_size' },
            expected: { type: 'rule', rules: {} },
          },
        }),
        't.json',
      ),
    ).toThrow(/evaluator result type "vm_screen_size" is not supported here/);
    expect(() =>
      parseOsworldTask(
        task({
          config: [
            {
              type: 'download',
              parameters: { files: [{ url: 'https://example.com/a.xlsx', path: '/home/agent/a.xlsx' }] },
            },
          ],
        }),
        't.json',
      ),
    ).toThrow(/only local files are supported here/);
    expect(() => parseOsworldTask(task({ config: [{ type: 'sleep', parameters: {} }] }), 't.json')).toThrow(
      /config type "sleep": /,
    );
    expect(() =>
      parseOsworldTask(
        task({ evaluator: { func: 'exact_match', result: { type: 'vm_file', path: '/a' } } }),
        't.json',
      ),
    ).toThrow(/exact_match needs a result and an expected value/);
    expect(() => parseOsworldTask(task({ instruction: '' }), 't.json')).toThrow(/instruction/);
  });

  it('infeasible needs no result', () => {
    const parsed = parseOsworldTask(task({ evaluator: { func: 'infeasible' } }), 'inline');
    expect(parsed.evaluator.checks).toEqual([
      { func: 'infeasible', result: null, expected: null, options: {} },
    ]);
  });
});

describe('loading gui tasks', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gui-tasks-'));
    // An OSWorld-like layout: examples/<domain>/<id>.json plus a meta file mapping domains to ids.
    await mkdir(join(dir, 'examples', 'os'), { recursive: true });
    await mkdir(join(dir, 'examples', 'chrome'), { recursive: true });
    await writeFile(join(dir, 'test_all.json'), JSON.stringify({ os: ['os-1'], chrome: ['chrome-1'] }));
    await writeFile(join(dir, 'examples', 'os', 'os-1.json'), JSON.stringify(task({ id: 'os-1' })));
    await writeFile(
      join(dir, 'examples', 'chrome', 'chrome-1.json'),
      JSON.stringify(task({ id: 'chrome-1', config: [{ type: 'chrome_open_tabs', parameters: {} }] })),
    );
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  // A task named by `../../etc/x.json` (or any absolute path) used to be read, and its folder became the one
  // the task's own files are copied from; now a task file must lie in the shipped tasks, tasksDir or
  // gui.taskFileRoots.
  it('refuses a task file outside the task folders with a clear error, and accepts one in taskFileRoots', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'gui-outside-'));
    try {
      await writeFile(join(outside, 'x.json'), JSON.stringify(task({ id: 'x' })));
      const environment = new GuiEnvironment();
      for (const id of [
        '../../etc/x.json',
        '/etc/x.json',
        join(outside, 'x.json'),
        join(dir, 'examples', 'os', 'os-1.json'),
      ])
        await expect(environment.loadTask(id), id).rejects.toThrow(
          /task id: .*x\.json|task id: .*os-1\.json/,
        );
      await expect(environment.loadTask(join(outside, 'x.json'))).rejects.toThrow(
        /is not inside gui\.taskFileRoots \(.*environments\/gui\/tasks.*\); refused/,
      );
      const rooted = new GuiEnvironment({ config: { taskFileRoots: [outside] } });
      expect((await rooted.loadTask(join(outside, 'x.json'))).data.task.id).toBe('x');
      await expect(rooted.loadTask(join(outside, 'missing.json'))).rejects.toThrow(/no gui task file/);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('scans a folder: runnable tasks by id, the others with the reason', async () => {
    const scan = await scanGuiTasks(dir);
    expect([...scan.tasks.keys()]).toEqual(['os-1']);
    expect(scan.rejected).toHaveLength(1);
    expect(scan.rejected[0]?.path).toMatch(/chrome-1\.json$/);
    expect(scan.rejected[0]?.reason).toMatch(/config type "chrome_open_tabs" is not supported/);
  });

  it('serves the bundled tasks, a tasksDir, and a task file given as the id', async () => {
    const environment = new GuiEnvironment({ config: { tasksDir: dir } });
    expect(await environment.listTasks()).toEqual([
      'xclock-close',
      'xedit-save-note',
      'xterm-create-file',
      'os-1',
    ]);
    expect((await environment.loadTask('os-1')).data.task.instruction).toBe('Do it.');
    const byPath = await environment.loadTask(join(dir, 'examples', 'os', 'os-1.json'));
    expect(byPath).toMatchObject({ kind: 'gui', data: { task: { id: 'os-1' } } });
    await expect(environment.loadTask('nope')).rejects.toThrow(/no gui task nope/);
    await expect(environment.loadTask(join(dir, 'examples', 'chrome', 'chrome-1.json'))).rejects.toThrow(
      /chrome_open_tabs/,
    );
    const shipped = join(import.meta.dirname, '../../environments/gui/tasks/xclock-close.json');
    expect((await environment.loadTask(shipped)).data.task.id).toBe('xclock-close');
    expect(environment.sandboxSpec(byPath)).toMatchObject({
      image: 'openclaw/sandbox-desktop',
      network: false,
      user: 'agent',
      env: { DISPLAY: ':0' },
      limits: { pids: 256, memoryBytes: 1024 * 1024 * 1024 },
    });
  });

  it('is registered as the gui kind, configured by options.gui', async () => {
    const registry = createEnvironmentRegistry({ gui: { tasksDir: dir } }, ['gui']);
    expect(await registry.get('gui')?.listTasks()).toContain('os-1');
  });
});

describe('computer_use actions', () => {
  it('offers one function with the action vocabulary of the original', () => {
    expect(COMPUTER_USE_TOOL.function.name).toBe('computer_use');
    const action = COMPUTER_USE_TOOL.function.parameters.properties as { action: { enum: string[] } };
    expect(action.action.enum).toEqual([
      'key',
      'type',
      'mouse_move',
      'left_click',
      'left_click_drag',
      'right_click',
      'middle_click',
      'double_click',
      'triple_click',
      'scroll',
      'hscroll',
      'wait',
      'terminate',
    ]);
  });

  it('maps relative coordinates onto the screen, clamped', () => {
    expect(toPixel([0, 0], SCREEN)).toEqual([0, 0]);
    expect(toPixel([500, 500], SCREEN)).toEqual([640, 400]);
    expect(toPixel([1000, 1000], SCREEN)).toEqual([1279, 799]);
    expect(toPixel([648, 262], SCREEN)).toEqual([829, 210]);
    expect(toPixel([-20, 1200], SCREEN)).toEqual([0, 799]);
  });

  const args = (raw: Record<string, unknown>) => {
    const parsed = parseComputerUseAction(raw);
    if (!parsed.ok) throw new Error(parsed.error);
    return xdotoolArgs(parsed.action, SCREEN);
  };

  it('turns each action into an xdotool command line', () => {
    expect(args({ action: 'left_click', coordinate: [500, 250] })).toEqual([
      'mousemove',
      '--sync',
      '640',
      '200',
      'click',
      '1',
    ]);
    expect(args({ action: 'left_click' })).toEqual(['click', '1']);
    expect(args({ action: 'right_click', coordinate: [0, 0] })).toEqual([
      'mousemove',
      '--sync',
      '0',
      '0',
      'click',
      '3',
    ]);
    expect(args({ action: 'middle_click' })).toEqual(['click', '2']);
    expect(args({ action: 'double_click' })).toEqual(['click', '--repeat', '2', '--delay', '80', '1']);
    expect(args({ action: 'triple_click' })).toEqual(['click', '--repeat', '3', '--delay', '80', '1']);
    expect(args({ action: 'mouse_move', coordinate: [250, 750] })).toEqual([
      'mousemove',
      '--sync',
      '320',
      '600',
    ]);
    expect(args({ action: 'left_click_drag', coordinate: [1000, 0] })).toEqual([
      'mousedown',
      '1',
      'sleep',
      '0.1',
      'mousemove',
      '--sync',
      '1279',
      '0',
      'sleep',
      '0.1',
      'mouseup',
      '1',
    ]);
    expect(args({ action: 'type', text: '-rf "x"\n' })).toEqual(['type', '--delay', '12', '--', '-rf "x"\n']);
    expect(args({ action: 'key', keys: ['ctrl', 'shift', 't'] })).toEqual([
      'key',
      '--clearmodifiers',
      'ctrl+shift+t',
    ]);
    expect(args({ action: 'key', keys: ['Enter'] })).toEqual(['key', '--clearmodifiers', 'Return']);
    expect(args({ action: 'scroll', pixels: -3 })).toEqual(['click', '--repeat', '3', '--delay', '30', '5']);
    expect(args({ action: 'scroll', pixels: 2, coordinate: [500, 500] })).toEqual([
      'mousemove',
      '--sync',
      '640',
      '400',
      'click',
      '--repeat',
      '2',
      '--delay',
      '30',
      '4',
    ]);
    expect(args({ action: 'hscroll', pixels: 500 })).toEqual([
      'click',
      '--repeat',
      '50',
      '--delay',
      '30',
      '7',
    ]);
    expect(args({ action: 'hscroll', pixels: -1 })).toEqual(['click', '--repeat', '1', '--delay', '30', '6']);
    expect(args({ action: 'wait', time: 2 })).toBeNull();
    expect(args({ action: 'terminate', status: 'success' })).toBeNull();
  });

  it('names keys as X keysyms', () => {
    expect(
      ['esc', 'backspace', 'pagedown', 'cmd', 'f5', 'a', '+', '/', 'space', 'Page_Up'].map(xdotoolKeysym),
    ).toEqual(['Escape', 'BackSpace', 'Next', 'super', 'F5', 'a', 'plus', 'slash', 'space', 'Page_Up']);
  });

  it('explains invalid arguments', () => {
    expect(parseComputerUseAction({ action: 'fly' })).toMatchObject({
      ok: false,
      error: /invalid computer_use arguments/,
    });
    expect(parseComputerUseAction({ action: 'left_click', coordinate: [1] })).toMatchObject({
      ok: false,
      error: /coordinate/,
    });
    expect(parseComputerUseAction({ action: 'terminate', status: 'maybe' })).toMatchObject({ ok: false });
    expect(parseComputerUseAction({ action: 'type' })).toMatchObject({ ok: false, error: /text/ });
  });

  it('the episode finishes with the last terminate call, if any', () => {
    const step = (args: Record<string, unknown>) => ({
      action: { id: 'c', name: 'computer_use', arguments: args },
      observation: '',
    });
    expect(finishedWith([step({ action: 'wait' }), step({ action: 'terminate', status: 'failure' })])).toBe(
      'failure',
    );
    expect(finishedWith([step({ action: 'terminate', status: 'success' })])).toBe('success');
    expect(
      finishedWith([step({ action: 'terminate', status: 'success' }), step({ action: 'wait' })]),
    ).toBeNull();
    expect(finishedWith([])).toBeNull();
  });
});

describe('evaluator functions', () => {
  it('exact_match compares with rules.expected', () => {
    expect(exactMatch('closed\n', { expected: 'closed\n' })).toBe(1);
    expect(exactMatch('closed', { expected: 'closed\n' })).toBe(0);
    expect(exactMatch(null, { expected: '' })).toBe(0);
    expect(() => exactMatch('x', 'x')).toThrow(/exact_match needs an expected value of type "rule"/);
  });

  it('check_include_exclude needs every include and no exclude', () => {
    const rules = { include: ['buy', 'milk'], exclude: ['eggs'] };
    expect(checkIncludeExclude('buy milk\n', rules)).toBe(1);
    expect(checkIncludeExclude('buy milk and eggs', rules)).toBe(0);
    expect(checkIncludeExclude('buy bread', rules)).toBe(0);
    expect(checkIncludeExclude(null, rules)).toBe(0);
  });

  it('compare_text_file compares texts, optionally ignoring blanks and case', () => {
    expect(compareTextFile('a b\n', 'a b\n')).toBe(1);
    expect(compareTextFile('a  b', 'a b\n')).toBe(0);
    expect(compareTextFile('a  b', 'a b\n', { ignore_blanks: true })).toBe(1);
    expect(compareTextFile('A B', 'a b', { ignore_case: true })).toBe(1);
    expect(compareTextFile(null, 'a')).toBe(0);
  });

  it('giving up scores 0, except on infeasible tasks where it is the answer', () => {
    expect(scoreCheck('exact_match', 'x', { expected: 'x' }, false, {})).toBe(1);
    expect(scoreCheck('exact_match', 'x', { expected: 'x' }, true, {})).toBe(0);
    expect(scoreCheck('infeasible', null, null, true, {})).toBe(1);
    expect(scoreCheck('infeasible', null, null, false, {})).toBe(0);
  });

  it('combines checks with and / or as OSWorld does', () => {
    expect(combineScores([1, 1], 'and')).toBe(1);
    expect(combineScores([1, 0], 'and')).toBe(0);
    expect(combineScores([1, 0], 'or')).toBe(1);
    expect(combineScores([], 'and')).toBe(0);
  });
});

describe('task setup commands', () => {
  it('runs strings through sh -c, argv lists as they are', () => {
    expect(commandArgv('echo hi > /tmp/x', undefined)).toEqual(['sh', '-c', 'echo hi > /tmp/x']);
    expect(commandArgv(['xclock', '-digital'], undefined)).toEqual(['xclock', '-digital']);
    expect(commandArgv(['echo', 'a', '&&', 'echo', 'b'], true)).toEqual(['sh', '-c', 'echo a && echo b']);
  });

  it('waits for the window named by the task, else the program', () => {
    expect(launchWindowPattern({ command: ['/usr/bin/xedit', 'a.txt'] })).toBe('^xedit$');
    expect(launchWindowPattern({ command: 'xterm -geometry 80x24' })).toBe('^xterm$');
    expect(launchWindowPattern({ command: ['google-chrome'], window: 'Chrom' })).toBe('Chrom');
  });
});
