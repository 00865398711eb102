// Reading a test run: per-test outcomes from pytest's `-rA` summary ("PASSED tests/x.py::test_a",
// "FAILED ... - reason") and from Django's runner ("test_a (app.tests.T) ... ok"), and the verdict of
// SWE-bench: resolved when every FAIL_TO_PASS and every PASS_TO_PASS test passed. A listed test that the log
// does not mention did not pass.

import type { SweInstance } from './swe-instance.js';

export type TestOutcome = 'passed' | 'failed';

const PYTEST_LINE = /^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (.+?)(?: - .*)?$/;
const DJANGO_LINE =
  /^(\w+ \([\w.]+\))(?: .*)? \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$/;

/** Outcomes by test id; a test reported twice keeps its worst outcome. */
export function parseTestOutcomes(log: string): Map<string, TestOutcome> {
  const outcomes = new Map<string, TestOutcome>();
  const note = (id: string, passed: boolean) => {
    if (outcomes.get(id) === 'failed') return;
    outcomes.set(id, passed ? 'passed' : 'failed');
  };
  for (const raw of log.split('\n')) {
    const line = raw.trimEnd();
    const pytest = PYTEST_LINE.exec(line);
    if (pytest) {
      const [, status, id] = pytest as unknown as [string, string, string];
      // SWE-bench counts an expected failure as a pass; a skipped test has no id on its summary line.
      if (status !== 'SKIPPED') note(id, status === 'PASSED' || status === 'XFAIL');
      continue;
    }
    const django = DJANGO_LINE.exec(line);
    if (django) {
      const [, id, status] = django as unknown as [string, string, string];
      note(id, status === 'ok' || status === 'expected failure');
    }
  }
  return outcomes;
}

export interface TestVerdict {
  resolved: boolean;
  failingFailToPass: string[];
  failingPassToPass: string[];
}

export function judgeTests(instance: SweInstance, outcomes: Map<string, TestOutcome>): TestVerdict {
  const failing = (ids: string[]) => ids.filter((id) => outcomes.get(id) !== 'passed');
  const failingFailToPass = failing(instance.failToPass);
  const failingPassToPass = failing(instance.passToPass);
  return {
    resolved: failingFailToPass.length === 0 && failingPassToPass.length === 0,
    failingFailToPass,
    failingPassToPass,
  };
}

export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** The command that runs the instance's listed tests: its own test_cmd, or the configured default. */
export function testCommandLine(instance: SweInstance, defaultCommand: string): string {
  const tests = [...instance.failToPass, ...instance.passToPass].map(shellQuote).join(' ');
  const command = instance.testCommand ?? defaultCommand;
  return command.includes('{tests}') ? command.replaceAll('{tests}', tests) : `${command} ${tests}`;
}

/** Names at most `max` tests, then how many more. */
export function listTests(ids: string[], max = 8): string {
  const shown = ids.slice(0, max).join(', ');
  return ids.length > max ? `${shown} and ${ids.length - max} more` : shown;
}
