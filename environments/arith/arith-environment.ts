// `arith`: arithmetic word problems with a `calculator` tool and a `submit` tool. Deterministic and
// container-free (`sandboxSpec` is null), so thousands of rollouts run anywhere, fast: the fan-out tests
// and a first run of the training loop use it. The episode's state is its history (the calls made so far),
// which the env host reads from the sample store, so a restarted worker continues where it stopped.
//
// Reward: +1 for the right number, 0 for a wrong number, −1 when no number was given (a format failure).
// The answer is the last `submit`, else the last number of the final message.

import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type {
  Environment,
  EnvTask,
  EpisodeContext,
  Evaluation,
  ResetResult,
  StepResult,
  ToolCallAction,
  ToolSchema,
} from '../environment.js';
import { calculate, formatNumber } from './calculator.js';
import { type ArithProblem, arithProblem } from './problems.js';

export const ARITH_SYSTEM_PROMPT =
  'You solve arithmetic word problems. Use the calculator tool for the arithmetic, then call submit with the final number.';

export const ARITH_TOOLS: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'calculator',
      description: 'Evaluates an arithmetic expression with + - * / and parentheses.',
      parameters: {
        type: 'object',
        properties: { expression: { type: 'string', description: 'for example (12*7)+3' } },
        required: ['expression'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'submit',
      description: 'Submits the final answer and ends the episode.',
      parameters: {
        type: 'object',
        properties: { answer: { type: 'number', description: 'the final number' } },
        required: ['answer'],
      },
    },
  },
];

const problemFileSchema = z.strictObject({
  question: z.string().min(1),
  answer: z.number(),
  expression: z.string().default(''),
});

const LAST_NUMBER = /-?\d+(?:\.\d+)?/g;

function lastNumber(text: string): number | null {
  const matches = text.replaceAll(',', '').match(LAST_NUMBER);
  const last = matches?.at(-1);
  return last === undefined ? null : Number(last);
}

function answerOf(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string') return lastNumber(value);
  return null;
}

export interface ArithOptions {
  /** How many generated tasks `listTasks` names (`arith-0` … `arith-<count-1>`); default 1000. */
  count?: number;
}

export class ArithEnvironment implements Environment<ArithProblem> {
  readonly kind = 'arith';
  private readonly count: number;

  constructor(options: ArithOptions = {}) {
    this.count = options.count ?? 1000;
  }

  /** `arith-<k>` (generated) or a path to a JSON file `{question, answer, expression?}`. */
  async loadTask(id: string): Promise<EnvTask<ArithProblem>> {
    const generated = /^arith-(\d{1,9})$/.exec(id);
    if (generated?.[1]) return { kind: this.kind, id, data: arithProblem(Number(generated[1])) };
    if (id.endsWith('.json')) {
      const data = problemFileSchema.parse(JSON.parse(await readFile(id, 'utf8')));
      return { kind: this.kind, id, data };
    }
    throw new Error(`arith task ids are arith-<number> or a path to a .json problem, got "${id}"`);
  }

  async listTasks(): Promise<string[]> {
    return Array.from({ length: this.count }, (_, k) => `arith-${k}`);
  }

  sandboxSpec(): null {
    return null;
  }

  async reset(context: EpisodeContext<ArithProblem>): Promise<ResetResult> {
    return {
      messages: [
        { role: 'system', content: ARITH_SYSTEM_PROMPT },
        { role: 'user', content: context.task.data.question },
      ],
      tools: ARITH_TOOLS,
    };
  }

  async step(_context: EpisodeContext<ArithProblem>, action: ToolCallAction): Promise<StepResult> {
    if (action.name === 'calculator') {
      const expression = action.arguments.expression;
      if (typeof expression !== 'string')
        return { observation: 'error: "expression" must be a string', done: false };
      const result = calculate(expression);
      return { observation: result.ok ? formatNumber(result.value) : `error: ${result.error}`, done: false };
    }
    if (action.name === 'submit') {
      const answer = answerOf(action.arguments.answer);
      if (answer === null) return { observation: 'error: "answer" must be a number', done: false };
      return { observation: `submitted ${formatNumber(answer)}`, done: true };
    }
    return { observation: `[TOOL_ERROR] unknown tool: ${action.name}`, done: false };
  }

  async evaluate(context: EpisodeContext<ArithProblem>, finalAnswer: string | null): Promise<Evaluation> {
    const expected = context.task.data.answer;
    const submitted = [...(context.history ?? [])]
      .reverse()
      .find((entry) => entry.action.name === 'submit' && entry.observation.startsWith('submitted'));
    const given = submitted ? answerOf(submitted.action.arguments.answer) : lastNumber(finalAnswer ?? '');
    if (given === null) return { reward: -1, detail: `no number given (expected ${formatNumber(expected)})` };
    if (Math.abs(given - expected) < 1e-6) return { reward: 1, detail: `correct: ${formatNumber(expected)}` };
    return { reward: 0, detail: `wrong: ${formatNumber(given)} (expected ${formatNumber(expected)})` };
  }
}
