// The OSWorld metric functions this project implements, with OSWorld's semantics: each compares what the
// episode produced (`result`) with the task's expectation and returns 1 (match) or 0. A missing result (a file
// that does not exist) scores 0, as in OSWorld.

import type { EvaluatorFunc } from './osworld-task.js';

/** A getter's value: text (command output, file content), a task's `rules`, or null when there is nothing. */
export type GetterValue = string | Record<string, unknown> | null;

/** `result == rules.expected`. */
export function exactMatch(result: GetterValue, expected: GetterValue): number {
  const rules = rulesOf(expected, 'exact_match');
  return typeof result === 'string' && result === rules.expected ? 1 : 0;
}

/** Every `rules.include` string occurs in the result and no `rules.exclude` string does. */
export function checkIncludeExclude(result: GetterValue, expected: GetterValue): number {
  const rules = rulesOf(expected, 'check_include_exclude');
  if (typeof result !== 'string') return 0;
  const include = stringList(rules.include);
  const exclude = stringList(rules.exclude);
  return include.every((text) => result.includes(text)) && !exclude.some((text) => result.includes(text))
    ? 1
    : 0;
}

export interface TextCompareOptions {
  ignore_blanks?: boolean;
  ignore_case?: boolean;
}

/** Two texts are equal, optionally with runs of blanks folded to one space and case ignored. */
export function compareTextFile(
  result: GetterValue,
  expected: GetterValue,
  options: TextCompareOptions = {},
) {
  if (typeof result !== 'string' || typeof expected !== 'string') return 0;
  const normalise = (text: string) => {
    let out = text;
    if (options.ignore_blanks) out = out.replace(/\s+/g, ' ').trim();
    if (options.ignore_case) out = out.toLowerCase();
    return out;
  };
  return normalise(result) === normalise(expected) ? 1 : 0;
}

/**
 * The score of one check. `infeasible` tasks are solved by giving up (the last action terminates with
 * "failure"); for every other function giving up scores 0, as in OSWorld.
 */
export function scoreCheck(
  func: EvaluatorFunc,
  result: GetterValue,
  expected: GetterValue,
  gaveUp: boolean,
  options: unknown,
): number {
  if (func === 'infeasible') return gaveUp ? 1 : 0;
  if (gaveUp) return 0;
  switch (func) {
    case 'exact_match':
      return exactMatch(result, expected);
    case 'check_include_exclude':
      return checkIncludeExclude(result, expected);
    case 'compare_text_file':
      return compareTextFile(result, expected, (options ?? {}) as TextCompareOptions);
  }
}

/** OSWorld's conjunction of several checks: "and" is 0 if any is 0, else their mean; "or" is the best. */
export function combineScores(scores: readonly number[], conj: 'and' | 'or'): number {
  if (scores.length === 0) return 0;
  if (conj === 'or') return Math.max(...scores);
  if (scores.some((score) => score === 0)) return 0;
  return scores.reduce((sum, score) => sum + score, 0) / scores.length;
}

function rulesOf(expected: GetterValue, func: string): Record<string, unknown> {
  if (expected === null || typeof expected !== 'object') {
    throw new Error(`${func} needs an expected value of type "rule" ({"type": "rule", "rules": {...}})`);
  }
  return expected;
}

function stringList(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}
