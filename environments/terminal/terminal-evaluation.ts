// Evaluates a terminal episode as terminal-bench does: the task's run-tests.sh and tests/ are copied into the
// container at /tests only now (the policy never saw them; root owns them, so it cannot change them), run with
// TEST_DIR=/tests in the image's working directory for at most min(600, 4 · max_test_timeout_sec) seconds,
// and the pytest summary of the output gives the score. A task without run-tests.sh gets terminal-bench's
// default one, and /tests gets the offline equivalents of the uv/pytest runner scripts terminal-bench's
// harness supplies (test-runner/), unless the task's tests/ brings its own. The tests run as the sandbox's
// user, like the policy's commands.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Evaluation } from '../environment.js';
import type { Sandbox } from '../sandbox.js';
import { type PytestResult, parsePytestSummary } from './pytest-summary.js';
import { terminalReward } from './terminal-reward.js';
import { readTaskFile, type TerminalTaskData, taskFilesUnder } from './terminal-tasks.js';

/** terminal-bench's default run-tests.sh and the offline equivalents of its runner scripts. */
export const TEST_RUNNER_DIR = fileURLToPath(new URL('./test-runner', import.meta.url));
const RUNNER_SCRIPTS = ['setup-uv-pytest.sh', 'run-uv-pytest.sh'];

export const CONTAINER_TESTS_DIR = '/tests';
const TEST_LOG = '/run/openclaw/terminal-tests.log';
/** The tail of the test log that is read back; pytest's summary is at the end. */
const LOG_TAIL_BYTES = 256 * 1024;

export function evaluationTimeoutSec(task: TerminalTaskData, capSec: number): number {
  return Math.min(capSec, 4 * task.maxTestTimeoutSec);
}

/** Copies the tests in, runs them, and scores the episode from pytest's summary. */
export async function evaluateTerminalTask(
  sandbox: Sandbox,
  task: TerminalTaskData,
  capSec: number,
): Promise<Evaluation> {
  await runAsRoot(
    sandbox,
    `rm -rf ${CONTAINER_TESTS_DIR} ${TEST_LOG} && touch ${TEST_LOG} && chmod 666 ${TEST_LOG}`,
    30_000,
  );
  for (const file of await testFiles(task))
    await sandbox.writeFile(`${CONTAINER_TESTS_DIR}/${file.path}`, file.content);

  const timeoutSec = evaluationTimeoutSec(task, capSec);
  const run = await sandbox.exec(
    ['bash', '-c', `bash ${CONTAINER_TESTS_DIR}/run-tests.sh > ${TEST_LOG} 2>&1`],
    {
      timeoutMs: timeoutSec * 1000,
      env: { TEST_DIR: CONTAINER_TESTS_DIR },
    },
  );
  const log = await runAsRoot(sandbox, `tail -c ${LOG_TAIL_BYTES} ${TEST_LOG} 2>/dev/null`, 30_000);
  const results = parsePytestSummary(log.stdout);
  const how = run.timedOut ? `timed out after ${timeoutSec} s` : `exit code ${run.exitCode ?? 'unknown'}`;
  if (results.length === 0) {
    const tail = log.stdout.trim().slice(-400);
    return {
      reward: -1,
      detail: `no pytest results parsed from run-tests.sh (${how}); the output needs pytest's -rA summary. Output tail: ${tail || '(empty)'}`,
    };
  }
  const passed = results.filter((result) => result.passed).length;
  return { reward: terminalReward(passed, results.length), detail: describeResults(results, passed, how) };
}

function describeResults(results: PytestResult[], passed: number, how: string): string {
  const failing = results
    .filter((result) => !result.passed)
    .map((result) => `${result.test} (${result.status})`);
  const failures = failing.length > 0 ? `; failing: ${failing.join(', ')}` : '';
  return `${passed}/${results.length} tests passed (run-tests.sh ${how})${failures}`;
}

/** Housekeeping on root's files (/tests, the log): root owns them, so it needs no capability for this. */
function runAsRoot(sandbox: Sandbox, script: string, timeoutMs: number) {
  return sandbox.exec(['bash', '-c', script], { timeoutMs, user: 'root' });
}

interface TestFile {
  /** Path under /tests. */
  path: string;
  content: Buffer;
}

/** run-tests.sh and everything under tests/, as terminal-bench lays them out in /tests. */
async function testFiles(task: TerminalTaskData): Promise<TestFile[]> {
  const runTests = task.hasRunTests
    ? await readTaskFile(task, 'run-tests.sh')
    : await readFile(join(TEST_RUNNER_DIR, 'run-tests.sh'));
  const files: TestFile[] = [{ path: 'run-tests.sh', content: runTests }];
  const names = task.hasTestsDir ? await taskFilesUnder(task, 'tests') : [];
  for (const name of names)
    files.push({ path: name, content: await readTaskFile(task, join('tests', name)) });
  for (const script of RUNNER_SCRIPTS)
    if (!names.includes(script))
      files.push({ path: script, content: await readFile(join(TEST_RUNNER_DIR, script)) });
  return files;
}
