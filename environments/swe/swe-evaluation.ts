// Scoring a patch in a fresh container of the instance's image (spec 10.3): apply it to the base commit in
// /testbed, put the test files back as the row defines them (the base commit's version, then the row's
// test_patch, as the SWE-bench harness does, so a patch cannot pass by editing the tests), run the listed
// tests, and read one outcome per test. Resolved = every FAIL_TO_PASS and PASS_TO_PASS test passes.

import type { Sandbox } from '../sandbox.js';
import { runBash } from './bash-tool.js';
import type { SweInstance } from './swe-instance.js';
import { patchedFiles } from './swe-patch.js';
import { judgeTests, listTests, parseTestOutcomes, shellQuote, testCommandLine } from './test-outcomes.js';

const EVAL_DIR = '/run/openclaw/swe-eval';

export interface EvaluationSettings {
  workdir: string;
  timeoutMs: number;
  /** The test command of rows without their own. */
  testCommand: string;
}

export interface PatchVerdict {
  resolved: boolean;
  detail: string;
}

export async function evaluatePatch(
  sandbox: Sandbox,
  instance: SweInstance,
  patch: string,
  settings: EvaluationSettings,
): Promise<PatchVerdict> {
  const run = (script: string) => runBash(sandbox, script, settings);
  await sandbox.writeFile(`${EVAL_DIR}/model.patch`, ensureTrailingNewline(patch));
  // git apply is all or nothing; patch(1) with fuzz accepts what a slightly stale diff would not.
  const applied = await run(
    `git apply --verbose --whitespace=nowarn ${EVAL_DIR}/model.patch || patch --batch --fuzz=5 -p1 -i ${EVAL_DIR}/model.patch`,
  );
  if (applied.returncode !== 0)
    return { resolved: false, detail: `the patch does not apply: ${lastLines(applied.output)}` };

  let testRun: { returncode: number; output: string };
  if (instance.evalScript !== undefined) {
    await sandbox.writeFile(`${EVAL_DIR}/eval.sh`, instance.evalScript);
    testRun = await run(`bash ${EVAL_DIR}/eval.sh`);
  } else {
    const restored = await run(restoreTestFilesScript(instance));
    if (restored.returncode !== 0)
      return { resolved: false, detail: `the test files could not be reset: ${lastLines(restored.output)}` };
    if (instance.testPatch !== undefined) {
      await sandbox.writeFile(`${EVAL_DIR}/test.patch`, ensureTrailingNewline(instance.testPatch));
      const tests = await run(`git apply --verbose --whitespace=nowarn ${EVAL_DIR}/test.patch`);
      if (tests.returncode !== 0)
        return {
          resolved: false,
          detail: `the row's test_patch does not apply after the patch: ${lastLines(tests.output)}`,
        };
    }
    testRun = await run(testCommandLine(instance, settings.testCommand));
  }
  if (testRun.returncode === -1 && /Command timed out/.test(testRun.output))
    return { resolved: false, detail: `the tests ran past ${Math.round(settings.timeoutMs / 1000)} s` };

  const outcomes = parseTestOutcomes(testRun.output);
  const listed = [...instance.failToPass, ...instance.passToPass];
  if (instance.evalScript !== undefined && !listed.some((id) => outcomes.has(id))) {
    // An eval script whose log names none of the tests: its exit status decides, as in the original.
    const resolved = testRun.returncode === 0;
    return { resolved, detail: `eval_script exited with ${testRun.returncode}` };
  }
  const verdict = judgeTests(instance, outcomes);
  if (verdict.resolved)
    return {
      resolved: true,
      detail: `resolved: ${instance.failToPass.length} FAIL_TO_PASS and ${instance.passToPass.length} PASS_TO_PASS tests pass`,
    };
  const parts: string[] = [];
  if (verdict.failingFailToPass.length > 0)
    parts.push(
      `FAIL_TO_PASS not passing (${verdict.failingFailToPass.length}/${instance.failToPass.length}): ${listTests(verdict.failingFailToPass)}`,
    );
  if (verdict.failingPassToPass.length > 0)
    parts.push(
      `PASS_TO_PASS broken (${verdict.failingPassToPass.length}/${instance.passToPass.length}): ${listTests(verdict.failingPassToPass)}`,
    );
  if (outcomes.size === 0) parts.push(`no test results in the log: ${lastLines(testRun.output)}`);
  return { resolved: false, detail: `not resolved: ${parts.join('; ')}` };
}

/** The files the tests come from: those named by pytest ids, and those the row's test_patch changes. */
export function testFiles(instance: SweInstance): string[] {
  const files = new Set<string>();
  for (const id of [...instance.failToPass, ...instance.passToPass]) {
    const file = id.split('::')[0] as string;
    if (id.includes('::') && file.endsWith('.py')) files.add(file);
  }
  for (const file of patchedFiles(instance.testPatch ?? '')) files.add(file);
  return [...files].sort();
}

/** Each test file back to its base-commit version; one the base commit lacks is removed (test_patch adds it). */
function restoreTestFilesScript(instance: SweInstance): string {
  const files = testFiles(instance);
  if (files.length === 0) return 'true';
  const base = shellQuote(instance.baseCommit);
  return [
    'set -e',
    `for f in ${files.map(shellQuote).join(' ')}; do`,
    `  if git cat-file -e ${base}:"$f" 2>/dev/null; then git checkout -q ${base} -- "$f"; else rm -f -- "$f"; fi`,
    'done',
  ].join('\n');
}

function ensureTrailingNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

function lastLines(text: string, count = 6): string {
  const lines = text.trimEnd().split('\n');
  return lines.slice(-count).join(' | ').slice(-600) || '(no output)';
}
