// The Track 2 step judge (spec 10.1-10.4, the PRM of the terminal, SWE and tool-call agents), in this
// project's own words with the original's contract: the judge sees the task, the interaction so far and the
// agent's most recent step (its text, its tool calls and what they returned, or the parse error), and ends
// with \boxed{1} when the step was correct and useful or \boxed{-1} otherwise. The votes' mean is the step's
// score (core/judge-votes.ts). Long texts are cut so the prompt stays bounded whatever the episode's length.

import { clipMiddle } from './clip-middle.js';
import type { JudgePromptMessage } from './judge-prompts.js';

export interface JudgedStep {
  /** 0-based step index. */
  step: number;
  assistantText: string;
  /** The tool calls as the policy made them (name and arguments), as text. */
  toolCalls: string[];
  /** What each call returned, in order; for a parse error, the error the policy was shown. */
  results: string[];
  parseError: boolean;
}

export interface StepJudgeInput {
  /** The task as the policy was given it (the reset's user message). */
  task: string;
  /** The steps before the judged one, oldest first (the caller keeps the last few). */
  history: JudgedStep[];
  current: JudgedStep;
}

/** Characters kept of each part of the prompt. */
export const STEP_JUDGE_LIMITS = {
  task: 8_000,
  historyText: 1_000,
  currentText: 4_000,
} as const;

const STEP_JUDGE_SYSTEM = `You evaluate one step of an AI agent that works on a task through tools (a shell, a code interpreter, an editor, a desktop, ...). You are given the task, the steps the agent took before, and its most recent step: what it wrote, the tool calls it made and what those calls returned. Judge only the most recent step.

Give \\boxed{1} when ALL of these hold:
- the step is correct and helps with the task, given where the agent stood;
- the tool calls are well formed and the tools are used for what they are meant for;
- what the tools returned is consistent with progress (an expected non-zero status, such as grep finding nothing, is fine).

Give \\boxed{-1} otherwise, for example when the step fails with an unexpected error, is irrelevant to the task, repeats earlier work without reason, breaks something that worked, wastes the agent's remaining steps, or could not be parsed as a tool call.

Reason briefly, then end with exactly one score: \\boxed{1} or \\boxed{-1}.`;

function describeStep(step: JudgedStep, max: number): string {
  const calls =
    step.toolCalls.length > 0 ? step.toolCalls.map((c) => clipMiddle(c, max)).join('\n') : '(none)';
  const label = step.parseError ? 'Parse error shown to the agent' : 'Tool results';
  const results =
    step.results.length > 0 ? step.results.map((r) => clipMiddle(r, max)).join('\n---\n') : '(none)';
  return `### Step ${step.step + 1}
Agent wrote:
${clipMiddle(step.assistantText, max) || '(nothing)'}
Tool calls:
${calls}
${label}:
${results}`;
}

/** The judge's messages for one step. */
export function buildStepJudgeMessages(input: StepJudgeInput): JudgePromptMessage[] {
  const history =
    input.history.length > 0
      ? input.history.map((step) => describeStep(step, STEP_JUDGE_LIMITS.historyText)).join('\n\n')
      : '(this is the first step)';
  const user = `## Task
${clipMiddle(input.task, STEP_JUDGE_LIMITS.task)}

## Earlier steps
${history}

## The step to evaluate
${describeStep(input.current, STEP_JUDGE_LIMITS.currentText)}

Evaluate only the step above, then give \\boxed{1} or \\boxed{-1}.`;
  return [
    { role: 'system', content: STEP_JUDGE_SYSTEM },
    { role: 'user', content: user },
  ];
}
