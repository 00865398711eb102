// Scores a finished gui episode the way OSWorld's evaluator does: run the postconfig steps, read each check's
// result and expected value (command output or a file in the container, the task's rules, or a file the task
// brings), apply the metric function, and combine the checks with the evaluator's conjunction. The score is in
// [0, 1]; the environment turns it into the ±1 reward.

import { readFile } from 'node:fs/promises';
import type { Sandbox } from '../sandbox.js';
import { outputOf, runOnDesktop, runScript } from './desktop.js';
import { combineScores, type GetterValue, scoreCheck } from './evaluator-funcs.js';
import type { Getter, OsworldEvaluator } from './osworld-task.js';
import { commandArgv, localPath, runConfigSteps, type SetupLimits } from './task-setup.js';

export interface EvaluationOutcome {
  score: number;
  /** One line per check: function, score and what was compared (cut short). */
  lines: string[];
}

export async function runEvaluator(
  sandbox: Sandbox,
  evaluator: OsworldEvaluator,
  baseDir: string,
  gaveUp: boolean,
  limits: SetupLimits,
): Promise<EvaluationOutcome> {
  await runConfigSteps(sandbox, evaluator.postconfig, baseDir, limits);
  const scores: number[] = [];
  const lines: string[] = [];
  for (const check of evaluator.checks) {
    const result = check.result === null ? null : await readGetter(sandbox, check.result, baseDir, limits);
    const expected =
      check.expected === null ? null : await readGetter(sandbox, check.expected, baseDir, limits);
    const score = scoreCheck(check.func, result, expected, gaveUp, check.options);
    scores.push(score);
    lines.push(
      check.func === 'infeasible'
        ? `infeasible: ${score} (${gaveUp ? 'gave up' : 'did not give up'})`
        : `${check.func}: ${score} (result ${preview(result)}, expected ${preview(expected)})`,
    );
  }
  return { score: combineScores(scores, evaluator.conj), lines };
}

export async function readGetter(
  sandbox: Sandbox,
  getter: Getter,
  baseDir: string,
  limits: SetupLimits,
): Promise<GetterValue> {
  switch (getter.type) {
    case 'vm_command_line': {
      const result = await runOnDesktop(
        sandbox,
        commandArgv(getter.command, getter.shell),
        limits.commandTimeoutMs,
      );
      if (result.timedOut) throw new Error(`evaluator command timed out: ${JSON.stringify(getter.command)}`);
      return result.stdout;
    }
    case 'vm_file': {
      // Read as the sandbox user, so a file the user could not have written still counts as what it is.
      const result = await runScript(
        sandbox,
        '[ -f "$1" ] || exit 3; cat -- "$1"',
        [getter.path],
        limits.commandTimeoutMs,
      );
      if (result.exitCode === 3) return null;
      if (result.exitCode !== 0) throw new Error(`cannot read ${getter.path}: ${outputOf(result)}`);
      return result.stdout;
    }
    case 'rule':
      return getter.rules;
    case 'cloud_file':
    case 'local_file':
      return readFile(await localPath(getter.path, baseDir, 'evaluator getter path'), 'utf8');
  }
}

function preview(value: GetterValue): string {
  if (value === null) return 'none';
  const text = JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
