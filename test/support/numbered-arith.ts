// arith with the task number in front of the question, so a scripted policy can answer it (as the fan-out
// test does), and the script that answers every task right.

import { ArithEnvironment } from '../../environments/arith/arith-environment.js';
import { arithProblem } from '../../environments/arith/problems.js';
import type { ScriptContext, ScriptedTurn } from './scripted-policy-server.js';

export class NumberedArith extends ArithEnvironment {
  override async loadTask(id: string) {
    const task = await super.loadTask(id);
    return {
      ...task,
      data: { ...task.data, question: `#${id.slice('arith-'.length)} ${task.data.question}` },
    };
  }
}

/** Submits the right answer at the first turn. */
export function answerRight({ task }: ScriptContext): ScriptedTurn {
  const k = Number(/^#(\d+)/.exec(task)?.[1] ?? -1);
  const answer = k >= 0 ? arithProblem(k).answer : 0;
  return { toolCalls: [{ name: 'submit', arguments: { answer } }] };
}
