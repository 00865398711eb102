// Reads pytest's "short test summary info" section (printed for every test with `-rA`) the way terminal-bench's
// pytest parser does: one line per test, `STATUS path::test[ - message]`. As there, SKIPPED and XFAIL count as
// passing and XPASS and ERROR as failing; a test listed twice (a pass, then an error in its teardown) keeps its
// worst result.

export type PytestStatus = 'PASSED' | 'FAILED' | 'ERROR' | 'SKIPPED' | 'XFAIL' | 'XPASS';

export interface PytestResult {
  /** The test's node id after the file (`test_x`, `TestClass::test_y[param]`). */
  test: string;
  status: PytestStatus;
  passed: boolean;
}

const SUMMARY_HEADER = /^=+ short test summary info =+\s*$/;
const RESULT_LINE = /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(.+?)\s*$/;
/** Terminal colour codes (ESC [ ... m), stripped before reading. */
const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
const PASSING: ReadonlySet<PytestStatus> = new Set(['PASSED', 'SKIPPED', 'XFAIL']);

/** The tests in the last summary section of `output`, in order of first mention; [] when there is none. */
export function parsePytestSummary(output: string): PytestResult[] {
  const lines = output.replace(ANSI_COLOUR, '').split(/\r?\n/);
  let start = -1;
  lines.forEach((line, index) => {
    if (SUMMARY_HEADER.test(line.trim())) start = index + 1;
  });
  if (start < 0) return [];
  const results = new Map<string, PytestResult>();
  for (const line of lines.slice(start)) {
    const match = RESULT_LINE.exec(line.trim());
    if (!match) {
      if (/^=+ .* =+$/.test(line.trim())) break; // the closing "=== 3 passed in 0.1s ===" line
      continue;
    }
    const status = match[1] as PytestStatus;
    const test = testName(match[2] as string);
    const result: PytestResult = { test, status, passed: PASSING.has(status) };
    const earlier = results.get(test);
    if (earlier === undefined || (earlier.passed && !result.passed)) results.set(test, result);
  }
  return [...results.values()];
}

/** `tests/test_outputs.py::test_x - AssertionError: ...` → `test_x`; a SKIPPED line keeps its location. */
function testName(rest: string): string {
  const withoutMessage = rest.replace(/ - .*$/, '');
  const separator = withoutMessage.indexOf('::');
  return separator >= 0 ? withoutMessage.slice(separator + 2) : withoutMessage;
}
