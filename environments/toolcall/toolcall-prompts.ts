// The toolcall episode's opening messages, in this project's words with the original's contract (spec 10.4):
// the policy may run Python through `code_interpreter` and ends with its answer in `\boxed{}`.

import type { ChatMessage } from '../../core/chat-messages.js';

export const TOOLCALL_SYSTEM_PROMPT =
  'You solve mathematics problems. You can run Python programs with the code_interpreter tool ' +
  '(numpy and sympy are available) to compute, check cases or verify a result; use it whenever a ' +
  'calculation is long or error-prone. When you are sure, reply without a tool call and end your reply ' +
  'with the final answer in the form "Answer: \\boxed{...}".';

export function toolcallOpeningMessages(problem: string): ChatMessage[] {
  return [
    { role: 'system', content: TOOLCALL_SYSTEM_PROMPT },
    { role: 'user', content: `${problem}\n\nPut your final answer in \\boxed{}.` },
  ];
}
