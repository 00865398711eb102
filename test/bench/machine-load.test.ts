// Scenario: someone reads a benchmark's output to judge a goal; figures taken while other work loaded the
// machine (one-minute load average 2 or more, before or after the run) must say LOADED, or a flipped order
// (the reference engine "1.74x" vLLM at load 11-18, 0.50x quiet) is taken for the real one. The TypeScript
// and Python benches must draw that line at the same place.

import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { machineLoad, QUIET_LOAD } from '../../bench/support/machine-load.js';

const LOADED = 'LOADED (above 2): these figures are not the ones goals are judged on';

const cases: { before: number; after: number; label: string; quiet: boolean }[] = [
  { before: 1.23, after: 1.8, quiet: true, label: 'load average before 1.23 / after 1.80: quiet' },
  { before: 0, after: 1.99, quiet: true, label: 'load average before 0.00 / after 1.99: quiet' },
  { before: 1.5, after: 2, quiet: false, label: `load average before 1.50 / after 2.00: ${LOADED}` },
  { before: 11.4, after: 1.2, quiet: false, label: `load average before 11.40 / after 1.20: ${LOADED}` },
];

describe('the machine-load label of a benchmark', () => {
  it('is quiet only below 2 before and after', () => {
    expect(QUIET_LOAD).toBe(2);
    for (const c of cases) {
      expect(machineLoad(c.before, c.after)).toEqual({
        before: c.before,
        after: c.after,
        quiet: c.quiet,
        label: c.label,
      });
    }
  });

  it('reads the same from bench/machine_load.py', () => {
    const script = [
      'import json, sys',
      'from machine_load import machine_load',
      'print(json.dumps([machine_load(b, a) for b, a in json.loads(sys.argv[1])]))',
    ].join('\n');
    const pairs = cases.map((c) => [c.before, c.after]);
    const out = execFileSync('python3', ['-c', script, JSON.stringify(pairs)], {
      cwd: 'bench',
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual(
      cases.map(({ before, after, quiet, label }) => ({ before, after, quiet, label })),
    );
  });
});
