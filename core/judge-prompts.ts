// The two judge prompts, in this project's own words, with the original's output contract (spec 4.2, 6.2):
// the binary judge ends with \boxed{1}, \boxed{-1} or \boxed{0}; the hint judge ends with \boxed{1} or
// \boxed{-1} and, only for 1, a hint between [HINT_START] and [HINT_END]. Like the original, the judge sees
// only the assistant's response and the next state, not the conversation before it.

import type { NextStateRole } from './chat-messages.js';

export interface JudgeInput {
  /** The assistant's response at the judged turn, as rendered for training. */
  responseText: string;
  /** The text of the message that followed it. */
  nextStateText: string;
  nextStateRole: NextStateRole;
}

export interface JudgePromptMessage {
  role: 'system' | 'user';
  content: string;
  /**
   * Data URLs of images sent after the text, for a judge that reads images (`judge.vision`); the text names each
   * where it was (core/image-notes.ts). A judge that reads text only ignores them.
   */
  images?: string[];
}

const BINARY_JUDGE_SYSTEM = `You grade a single step of an AI assistant's work. You are shown what the assistant produced and the state that came straight after it, called the next state. Use the next state as evidence to decide whether the assistant's output achieved what the user wanted at that step.

## What the next state can be
- role 'user': the user's next message.
- role 'tool': the output of a tool that the assistant decided to call. This output did not exist before the assistant acted; it is a consequence of the call. A normal output without errors is evidence that the assistant's action worked, and counts in its favour.

## How to score
- \\boxed{1}, good: things moved forward as intended. For example the user goes on to something new or thanks the assistant, the environment reports success, or a tool returns a clean result.
- \\boxed{-1}, bad: the next state shows that the output was wrong, incomplete or not wanted. Clear signs:
  * the user asks for the same action to be done again or retried;
  * the user asks to fix, adjust or replace what was just produced ("make it X instead", "that is not what I meant", "please correct ...");
  * the user repeats or rewords the same request, so it was not understood or not carried out;
  * a tool or the environment reports an error, a failure or an unexpected result caused by the assistant's action.
- \\boxed{0}, neutral: the next state neither confirms nor contradicts success (for example an unrelated follow-up), or there is too little to go on.

## Keep in mind
A request to change what the assistant has just done is negative feedback: the output did not meet the need. Never treat it as a neutral new instruction.

Reason it through, then finish with exactly one score in \\boxed{}.`;

const HINT_JUDGE_SYSTEM = `You extract hindsight hints that are used to train an AI assistant. You are shown the assistant's response at one step (turn t) and the state that followed it (turn t+1), together with that state's role.

## What the next state can be
- role 'user': the user's next message (a follow-up, a correction, a new request, ...).
- role 'tool': the output of a tool that the assistant called. It exists only because the assistant made the call. A normal output without errors usually means the call was reasonable; do not treat it as something the assistant should have known beforehand.

Decide whether the next state holds information that would have let the assistant write a better response at turn t, had it known it then.

## Answer format (strict)
- Give exactly one final decision: \\boxed{1} when such information exists, \\boxed{-1} when it does not.
- With \\boxed{1}, and only then, add a hint of one to three sentences between [HINT_START] and [HINT_END]. It must be specific and actionable: say what the response should have done differently, densely and without filler.
- With \\boxed{-1}, write no hint block.`;

/** Messages asking the binary judge whether the turn went well (+1), badly (-1) or unclear (0). */
export function buildBinaryJudgeMessages(input: JudgeInput): JudgePromptMessage[] {
  const user = `## What the assistant produced
${input.responseText}

## What came next [role: ${input.nextStateRole}]
${input.nextStateText}

First say which kind of next state this is: (a) progress, (b) a correction, retry or change request, or (c) inconclusive. Then give your score: \\boxed{1}, \\boxed{-1} or \\boxed{0}.`;
  return [
    { role: 'system', content: BINARY_JUDGE_SYSTEM },
    { role: 'user', content: user },
  ];
}

/** Messages asking the hint judge for a decision and, when positive, a hint to put in the teacher's prompt. */
export function buildHintJudgeMessages(input: JudgeInput): JudgePromptMessage[] {
  const user = `## Assistant response (turn t)
${input.responseText}

## Next state (turn t+1) [role: ${input.nextStateRole}]
${input.nextStateText}

Give your decision and, if it is \\boxed{1}, the hint, in the format described above.`;
  return [
    { role: 'system', content: HINT_JUDGE_SYSTEM },
    { role: 'user', content: user },
  ];
}
