// The swe kind's pure parts: row validation (JSON-string test lists), image naming, task ids that name files,
// the observation format, patch checks and test-log parsing. No containers.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSweConfig } from '../../environments/swe/swe-config.js';
import { SweEnvironment } from '../../environments/swe/swe-environment.js';
import { testFiles } from '../../environments/swe/swe-evaluation.js';
import { instanceImage, parseSweInstance } from '../../environments/swe/swe-instance.js';
import { readSweInstances, taskFileReference } from '../../environments/swe/swe-instances.js';
import { formatObservation, LONG_OUTPUT_WARNING } from '../../environments/swe/swe-observation.js';
import {
  patchedFiles,
  patchProblem,
  SUBMIT_COMMAND,
  submittedPatch,
} from '../../environments/swe/swe-patch.js';
import { judgeTests, parseTestOutcomes, testCommandLine } from '../../environments/swe/test-outcomes.js';

const ROW = {
  instance_id: 'astropy__astropy-12907',
  repo: 'astropy/astropy',
  base_commit: 'd16bfe05a744909de4b27f5875fe0d4ed41ce607',
  problem_statement:
    'Modeling separability_matrix does not compute separability correctly for nested CompoundModels',
  FAIL_TO_PASS: '["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]',
  PASS_TO_PASS: '["astropy/modeling/tests/test_separable.py::test_coord_matrix"]',
  hints_text: 'ignored',
  version: '4.3',
  created_at: '2022-03-03T15:14:54Z',
};

const GOOD_PATCH = `diff --git a/pkg/a.py b/pkg/a.py
index 1111111..2222222 100644
--- a/pkg/a.py
+++ b/pkg/a.py
@@ -1,2 +1,2 @@
-x = 1
+x = 2
 y = 3
`;

describe('swe instance rows', () => {
  it('accepts SWE-bench rows with JSON-encoded test lists and names the SWE-bench image', () => {
    const instance = parseSweInstance(ROW, 'swebench');
    expect(instance).toMatchObject({
      instanceId: 'astropy__astropy-12907',
      baseCommit: ROW.base_commit,
      failToPass: ['astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]'],
      passToPass: ['astropy/modeling/tests/test_separable.py::test_coord_matrix'],
      image: 'swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest',
    });
    expect(instance).not.toHaveProperty('hints_text');
  });

  it('accepts plain lists, a missing PASS_TO_PASS, and a row-named image', () => {
    const instance = parseSweInstance(
      { ...ROW, FAIL_TO_PASS: ['t::a'], PASS_TO_PASS: undefined, docker_image: 'my/image:1' },
      'swebench',
    );
    expect(instance.failToPass).toEqual(['t::a']);
    expect(instance.passToPass).toEqual([]);
    expect(instance.image).toBe('my/image:1');
    expect(parseSweInstance({ ...ROW, image_name: 'other/img' }, 'swe-gym').image).toBe('other/img');
  });

  it('names images the SWE-bench and SWE-Gym ways, lower-cased', () => {
    expect(instanceImage('Project-MONAI__MONAI-3690', 'swebench')).toBe(
      'swebench/sweb.eval.x86_64.project-monai_1776_monai-3690:latest',
    );
    expect(instanceImage('getmoto__moto-5752', 'swe-gym')).toBe(
      'xingyaoww/sweb.eval.x86_64.getmoto_s_moto-5752:latest',
    );
  });

  it('rejects broken rows with the field named', () => {
    expect(() => parseSweInstance({ ...ROW, FAIL_TO_PASS: 'not json' }, 'swebench', 'row 3')).toThrow(
      /row 3 is not a valid SWE-bench row: FAIL_TO_PASS: expected a list of test ids/,
    );
    expect(() => parseSweInstance({ ...ROW, base_commit: 'main' }, 'swebench')).toThrow(
      /base_commit: expected a git commit hash/,
    );
    expect(() => parseSweInstance({ ...ROW, instance_id: undefined }, 'swebench')).toThrow(/instance_id/);
    expect(() => parseSweInstance({ ...ROW, FAIL_TO_PASS: '[]', PASS_TO_PASS: [] }, 'swebench')).toThrow(
      /both empty/,
    );
  });

  it('validates the options', () => {
    expect(parseSweConfig()).toMatchObject({
      commandTimeoutMs: 180_000,
      stepLimit: 20,
      maxOutputChars: 10_000,
      workdir: '/testbed',
      imageNaming: 'swebench',
    });
    expect(() => parseSweConfig({ imageNaming: 'docker' as never })).toThrow(
      /invalid swe options: imageNaming/,
    );
  });
});

describe('swe instance sources', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'swe-rows-'));
    await writeFile(
      join(dir, 'rows.jsonl'),
      `${JSON.stringify(ROW)}\n\n${JSON.stringify({ ...ROW, instance_id: 'django__django-11099' })}\n`,
    );
    await writeFile(join(dir, 'one.json'), JSON.stringify({ ...ROW, instance_id: 'sympy__sympy-20590' }));
    await writeFile(join(dir, 'bad.jsonl'), `${JSON.stringify(ROW)}\n{"instance_id": "x"}\n`);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('reads task ids that name a file', () => {
    expect(taskFileReference('/data/rows.jsonl#django__django-11099')).toEqual({
      path: '/data/rows.jsonl',
      instanceId: 'django__django-11099',
    });
    expect(taskFileReference('row.json')).toEqual({ path: 'row.json', instanceId: null });
    expect(taskFileReference('openclaw__minisemver-1')).toBeNull();
  });

  it('serves the bundled fixtures, an instancesFile, and rows named by path', async () => {
    const environment = new SweEnvironment({ config: { instancesFile: join(dir, 'rows.jsonl') } });
    expect(await environment.listTasks()).toEqual([
      'openclaw__minisemver-1',
      'openclaw__iniconf-1',
      'openclaw__daterange-1',
      'astropy__astropy-12907',
      'django__django-11099',
    ]);
    const bundled = await environment.loadTask('openclaw__iniconf-1');
    expect(bundled.data.image).toBe('openclaw/swe-iniconf');
    expect(environment.sandboxSpec(bundled)).toMatchObject({ network: false, workdir: '/testbed' });
    // Row files by path: in instancesFile's folder, or in a folder the user adds to taskFileRoots.
    const byPath = await environment.loadTask(`${join(dir, 'rows.jsonl')}#django__django-11099`);
    expect(byPath.data.image).toBe('swebench/sweb.eval.x86_64.django_1776_django-11099:latest');
    const rooted = new SweEnvironment({ config: { taskFileRoots: [dir] } });
    expect((await rooted.loadTask(join(dir, 'one.json'))).data.instanceId).toBe('sympy__sympy-20590');
    await expect(rooted.loadTask(`${join(dir, 'rows.jsonl')}#nope`)).rejects.toThrow(/has no instance nope/);
    await expect(new SweEnvironment().loadTask('nope')).rejects.toThrow(/no swe instance nope/);
    await expect(readSweInstances(join(dir, 'bad.jsonl'), 'swebench')).rejects.toThrow(/bad.jsonl line 2/);
  });

  // A workflow starter named any row file the env host could read (`/home/op/secret.json`) and got it parsed
  // and echoed in errors; now only the shipped folder, instancesFile's and the configured roots are read.
  it('refuses a row file outside the default roots, and still serves the shipped rows by path', async () => {
    const environment = new SweEnvironment();
    for (const id of [
      join(dir, 'one.json'),
      `${join(dir, 'rows.jsonl')}#django__django-11099`,
      '../../etc/x.json',
    ])
      await expect(environment.loadTask(id), id).rejects.toThrow(
        /is not inside swe\.taskFileRoots \(.*environments\/swe.*\); refused/,
      );
    const shipped = join(import.meta.dirname, '../../environments/swe/instances.jsonl');
    expect((await environment.loadTask(`${shipped}#openclaw__iniconf-1`)).data.image).toBe(
      'openclaw/swe-iniconf',
    );
  });

  it('ships fixtures whose tests and reference patches fit together', async () => {
    const environment = new SweEnvironment();
    for (const id of await environment.listTasks()) {
      const { data } = await environment.loadTask(id);
      expect(data.failToPass.length).toBeGreaterThan(0);
      expect(data.passToPass.length).toBeGreaterThan(0);
      expect(patchProblem(data.goldPatch ?? '')).toBeNull();
      expect(testFiles(data)).toHaveLength(1);
    }
  });
});

describe('swe observations', () => {
  it('shows the return code and output, then the turns left', () => {
    expect(formatObservation({ returncode: 0, output: 'hello\n' }, 10_000, 7)).toBe(
      '<returncode>0</returncode>\n<output>\nhello\n</output>\nREMINDER: You have 7 turns left to complete the task.',
    );
    expect(formatObservation({ returncode: 2, output: '' }, 10_000, null)).toBe(
      '<returncode>2</returncode>\n<output>\n</output>',
    );
    expect(formatObservation({ returncode: 1, output: 'x' }, 10_000, 0)).toMatch(/You have no turns left/);
  });

  it('cuts long output to its first and last halves with a warning and the elided count', () => {
    const output = `${'a'.repeat(6000)}${'~'.repeat(3000)}${'z'.repeat(6000)}`;
    const text = formatObservation({ returncode: 0, output }, 10_000, 3);
    expect(text).toContain(`<warning>\n${LONG_OUTPUT_WARNING}\n</warning>`);
    expect(text).toContain(`<output_head>\n${'a'.repeat(5000)}\n</output_head>`);
    expect(text).toContain('<elided_chars>\n5000 characters elided\n</elided_chars>');
    expect(text).toContain(`<output_tail>\n${'z'.repeat(5000)}\n</output_tail>`);
    expect(text).not.toContain('~');
    expect(text.length).toBeLessThan(16_384);
  });
});

describe('swe patches and test logs', () => {
  it('recognises the submission output and extracts the patch', () => {
    expect(SUBMIT_COMMAND).toBe(
      'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached',
    );
    expect(submittedPatch(`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n${GOOD_PATCH}`)).toBe(GOOD_PATCH);
    expect(submittedPatch('\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n')).toBe('');
    expect(submittedPatch('echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT')).toBeNull();
  });

  it('accepts unified diffs and says what is wrong with anything else', () => {
    expect(patchProblem(GOOD_PATCH)).toBeNull();
    expect(patchProblem(GOOD_PATCH.replace(/^diff --git.*\n/, ''))).toBeNull(); // ---/+++ headers suffice
    expect(patchProblem('  \n')).toMatch(/empty/);
    expect(patchProblem('I fixed it by editing a.py')).toMatch(/not a unified diff/);
    expect(patchProblem('--- a/x\n+++ b/x\n+ no hunk header\n')).toMatch(/no hunks/);
    expect(patchedFiles(GOOD_PATCH)).toEqual(['pkg/a.py']);
  });

  it('reads pytest -rA and Django outcomes and judges FAIL_TO_PASS / PASS_TO_PASS', () => {
    const log = [
      '============ short test summary info ============',
      'PASSED tests/t.py::test_a',
      'PASSED tests/t.py::test_p[1.2]',
      'FAILED tests/t.py::test_b - AssertionError: assert 1 == 2',
      'XFAIL tests/t.py::test_x - reason',
      'ERROR tests/t.py::test_e - fixture missing',
      'SKIPPED [1] tests/t.py:9: skipped',
      'test_ok (app.tests.T) ... ok',
      'test_bad (app.tests.T)',
      'Docstring here ... FAIL',
    ].join('\n');
    const outcomes = parseTestOutcomes(log);
    expect(Object.fromEntries(outcomes)).toEqual({
      'tests/t.py::test_a': 'passed',
      'tests/t.py::test_p[1.2]': 'passed',
      'tests/t.py::test_b': 'failed',
      'tests/t.py::test_x': 'passed',
      'tests/t.py::test_e': 'failed',
      'test_ok (app.tests.T)': 'passed',
    });
    const instance = parseSweInstance(
      {
        ...ROW,
        FAIL_TO_PASS: ['tests/t.py::test_b'],
        PASS_TO_PASS: ['tests/t.py::test_a', 'tests/t.py::gone'],
      },
      'swebench',
    );
    expect(judgeTests(instance, outcomes)).toEqual({
      resolved: false,
      failingFailToPass: ['tests/t.py::test_b'],
      failingPassToPass: ['tests/t.py::gone'],
    });
    expect(testCommandLine(instance, 'python3 -m pytest -rA')).toBe(
      "python3 -m pytest -rA 'tests/t.py::test_b' 'tests/t.py::test_a' 'tests/t.py::gone'",
    );
    expect(testCommandLine({ ...instance, testCommand: 'pytest {tests} -x' }, 'unused')).toBe(
      "pytest 'tests/t.py::test_b' 'tests/t.py::test_a' 'tests/t.py::gone' -x",
    );
  });
});
