// The terminal kind's task loading (task.yaml, task folders, names and paths) and its pytest summary parser;
// no containers.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironmentRegistry } from '../../environments/registry.js';
import { parsePytestSummary } from '../../environments/terminal/pytest-summary.js';
import { taskImageName } from '../../environments/terminal/task-image.js';
import { parseTaskYaml } from '../../environments/terminal/task-yaml.js';
import { parseTerminalConfig } from '../../environments/terminal/terminal-config.js';
import { TerminalEnvironment } from '../../environments/terminal/terminal-environment.js';
import { terminalReward } from '../../environments/terminal/terminal-reward.js';
import { readTerminalTaskFolder } from '../../environments/terminal/terminal-tasks.js';

const BUNDLED = ['crontab-schedule', 'csv-summary', 'fix-backup-script', 'git-first-commit', 'rename-photos'];

describe('task.yaml', () => {
  it('reads instruction, timeouts and parser, ignoring fields it does not use', () => {
    const yaml = parseTaskYaml(
      [
        'instruction: |-',
        '  Do the thing.',
        '  Then stop.',
        'author_email: someone@example.com',
        'difficulty: medium',
        'tags: [a, b]',
        'max_agent_timeout_sec: 180',
        'max_test_timeout_sec: 15.5',
        'parser_name: pytest',
        'run_tests_in_same_shell: false',
        'unknown_field: {nested: true}',
      ].join('\n'),
      'task.yaml',
    );
    expect(yaml).toEqual({
      instruction: 'Do the thing.\nThen stop.',
      maxAgentTimeoutSec: 180,
      maxTestTimeoutSec: 15.5,
      parser: 'pytest',
      image: null,
      setupUser: 'agent',
      difficulty: 'medium',
      tags: ['a', 'b'],
    });
  });

  it('takes terminal-bench defaults, the descriptions variant and a named image', () => {
    const yaml = parseTaskYaml(
      'descriptions:\n  - key: hard\n    description: other\n  - key: base\n    description: " The base one. "\ndocker_image: my/img:1\n',
      'x/task.yaml',
    );
    expect(yaml).toMatchObject({
      instruction: 'The base one.',
      maxAgentTimeoutSec: 360,
      maxTestTimeoutSec: 60,
      image: 'my/img:1',
    });
    expect(parseTaskYaml('instruction: hi\nimage: other/img\n', 't').image).toBe('other/img');
  });

  it('rejects bad files with errors that name the file and the field', () => {
    expect(() => parseTaskYaml('instruction: [unclosed', 'a/task.yaml')).toThrow(
      /a\/task.yaml is not valid YAML/,
    );
    expect(() => parseTaskYaml('- just\n- a list\n', 'b/task.yaml')).toThrow(
      /b\/task.yaml must be a YAML mapping/,
    );
    expect(() => parseTaskYaml('', 'c/task.yaml')).toThrow(/must be a YAML mapping/);
    expect(() => parseTaskYaml('difficulty: easy\n', 'd/task.yaml')).toThrow(
      /d\/task.yaml: .*needs `instruction` or `descriptions/,
    );
    expect(() => parseTaskYaml('instruction: x\nmax_test_timeout_sec: -3\n', 'e')).toThrow(
      /e: max_test_timeout_sec: .*/,
    );
    expect(() => parseTaskYaml('instruction: x\nmax_test_timeout_sec: soon\n', 'f')).toThrow(
      /max_test_timeout_sec/,
    );
    expect(() => parseTaskYaml('instruction: x\nparser_name: unittest\n', 'g')).toThrow(
      /parser_name: only the "pytest" parser is supported/,
    );
    expect(() => parseTaskYaml('instruction: "  "\n', 'h')).toThrow(/instruction/);
  });
});

describe('pytest summary', () => {
  const output = [
    '============================= test session starts ==============================',
    'collected 5 items',
    '',
    'test_outputs.py ..F.E                                                    [100%]',
    '=================================== FAILURES ===================================',
    'PASSED is mentioned in a failure message but not a summary line',
    '=========================== short test summary info ============================',
    'PASSED test_outputs.py::test_a',
    'PASSED test_outputs.py::test_b[param - with dash]',
    'FAILED test_outputs.py::test_c - AssertionError: assert 1 == 2',
    'PASSED test_outputs.py::TestGroup::test_d',
    'ERROR test_outputs.py::TestGroup::test_d - RuntimeError: teardown broke',
    'XFAIL test_outputs.py::test_e - known bug',
    'XPASS test_outputs.py::test_f',
    '==================== 1 failed, 3 passed, 1 error in 0.12s =====================',
    'PASSED after_the_summary.py::test_ignored',
  ].join('\n');

  it('reads each test once from -rA summary lines, keeping its worst result', () => {
    expect(parsePytestSummary(output)).toEqual([
      { test: 'test_a', status: 'PASSED', passed: true },
      { test: 'test_b[param', status: 'PASSED', passed: true },
      { test: 'test_c', status: 'FAILED', passed: false },
      { test: 'TestGroup::test_d', status: 'ERROR', passed: false },
      { test: 'test_e', status: 'XFAIL', passed: true },
      { test: 'test_f', status: 'XPASS', passed: false },
    ]);
  });

  it('finds nothing without a summary section (no -rA, or pytest never ran)', () => {
    expect(parsePytestSummary('bash: pytest: command not found')).toEqual([]);
    expect(parsePytestSummary('test_x.py ..\n===== 2 passed in 0.01s =====')).toEqual([]);
  });

  it('ignores colours and carriage returns', () => {
    const coloured =
      '\x1b[36m==== short test summary info ====\x1b[0m\r\n\x1b[32mPASSED\x1b[0m t.py::test_ok\r\nFAILED t.py::test_bad\r\n';
    expect(parsePytestSummary(coloured).map((result) => [result.test, result.passed])).toEqual([
      ['test_ok', true],
      ['test_bad', false],
    ]);
  });

  it('turns pass fractions into 2·score − 1', () => {
    expect(terminalReward(4, 4)).toBe(1);
    expect(terminalReward(0, 4)).toBe(-1);
    expect(terminalReward(2, 4)).toBe(0);
    expect(terminalReward(3, 4)).toBe(0.5);
    expect(terminalReward(0, 0)).toBe(-1);
  });
});

describe('terminal tasks', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'terminal-tasks-'));
    const task = async (name: string, files: Record<string, string>) => {
      for (const [path, content] of Object.entries(files)) {
        await mkdir(join(dir, name, path, '..'), { recursive: true });
        await writeFile(join(dir, name, path), content);
      }
    };
    await task('mine', {
      'task.yaml': 'instruction: my own task\n',
      'run-tests.sh': 'true\n',
      'tests/test_outputs.py': '',
    });
    await task('csv-summary', { 'task.yaml': 'instruction: shadows the bundled one\n', 'run-tests.sh': '' });
    await task('no-yaml', { 'run-tests.sh': '' });
    await task('no-tests-script', { 'task.yaml': 'instruction: x\n' });
    await task('bad-yaml', { 'task.yaml': 'instruction: x\nmax_test_timeout_sec: -1\n', 'run-tests.sh': '' });
    await task('With Dockerfile', {
      'task.yaml': 'instruction: x\n',
      'run-tests.sh': '',
      Dockerfile: 'FROM x\n',
    });
  });

  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('serves the bundled tasks, each complete with tests and a reference solution', async () => {
    const environment = new TerminalEnvironment({ config: { buildTaskImages: false } });
    expect(environment.kind).toBe('terminal');
    expect(await environment.listTasks()).toEqual(BUNDLED);
    for (const name of BUNDLED) {
      const task = await environment.loadTask(name);
      expect(task).toMatchObject({
        kind: 'terminal',
        id: name,
        data: { name, hasSolution: true, hasTestsDir: true },
      });
      expect(task.data.instruction.length).toBeGreaterThan(40);
    }
    const git = await environment.loadTask('git-first-commit');
    expect(git.data.instruction).toMatch(/^Create a git repository/); // from `descriptions`
    const backup = await environment.loadTask('fix-backup-script');
    expect(environment.sandboxSpec(backup)).toMatchObject({
      image: 'openclaw/tbench-fix-backup-script',
      network: false,
    });
    expect(environment.sandboxSpec(await environment.loadTask('csv-summary')).image).toBe(
      'openclaw/sandbox-terminal',
    );
    await expect(environment.loadTask('no-such-task')).rejects.toThrow(/no terminal task "no-such-task"/);
    await expect(environment.loadTask('../etc')).rejects.toThrow(/neither a task name/);
  });

  it('serves a tasks folder by name before the bundled tasks, and any task folder by absolute path', async () => {
    const environment = new TerminalEnvironment({ config: { tasksDir: dir, buildTaskImages: false } });
    const names = await environment.listTasks();
    expect(names).toEqual(expect.arrayContaining([...BUNDLED, 'mine', 'bad-yaml']));
    expect(names).not.toContain('no-yaml');
    expect(names).not.toContain('With Dockerfile'); // not a valid name: reachable by its path only
    expect((await environment.loadTask('mine')).data).toMatchObject({
      name: 'mine',
      folder: join(dir, 'mine'),
      instruction: 'my own task',
    });
    expect((await environment.loadTask('csv-summary')).data.instruction).toBe('shadows the bundled one');

    const byPath = await new TerminalEnvironment({ config: { buildTaskImages: false } }).loadTask(
      join(dir, 'mine'),
    );
    expect(byPath).toMatchObject({ id: join(dir, 'mine'), data: { name: 'mine', hasSetup: false } });
    const opening = await new TerminalEnvironment()
      .reset({
        task: byPath,
        sandbox: null,
      })
      .catch((error: Error) => error.message);
    expect(opening).toMatch(/runs in a sandbox/);
  });

  it('says what is wrong with a folder that is not a task', async () => {
    await expect(readTerminalTaskFolder(join(dir, 'missing'))).rejects.toThrow(/does not exist/);
    await expect(readTerminalTaskFolder(join(dir, 'no-yaml'))).rejects.toThrow(/has no task.yaml/);
    // Without run-tests.sh terminal-bench's default one runs the tests.
    expect(await readTerminalTaskFolder(join(dir, 'no-tests-script'))).toMatchObject({ hasRunTests: false });
    await expect(readTerminalTaskFolder(join(dir, 'bad-yaml'))).rejects.toThrow(
      /bad-yaml\/task.yaml: max_test_timeout_sec/,
    );
    const docker = await readTerminalTaskFolder(join(dir, 'With Dockerfile'));
    // A folder outside the bundled tasks: its image name carries a hash of its path.
    expect(taskImageName(docker, 'default/image')).toMatch(/^openclaw\/tbench-with-dockerfile-[0-9a-f]{8}$/);
    expect(taskImageName({ ...docker, image: 'named/one' }, 'default/image')).toBe('named/one');
  });

  it('is registered as the terminal kind, with options.terminal validated', () => {
    const registry = createEnvironmentRegistry({ terminal: { commandTimeoutMs: 5_000 } }, ['terminal']);
    expect((registry.get('terminal') as TerminalEnvironment).config.commandTimeoutMs).toBe(5_000);
    expect(() => parseTerminalConfig({ commandTimeoutMs: 5 })).toThrow(
      /invalid terminal options: commandTimeoutMs/,
    );
    expect(() => parseTerminalConfig({ nope: 1 } as never)).toThrow(/invalid terminal options/);
  });
});
