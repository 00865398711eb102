// The toolcall environment (ReTool-style math, spec 10.4): the policy gets a math problem and one tool,
// `code_interpreter`, which runs Python in the episode's locked-down container; the episode is scored on the
// last `\boxed{}` of its final answer (core/math-answer.ts) with the original's ±1 reward and tool-use
// shaping. Steps keep their state in the container (episode-state.ts), so any worker can take the next one.

import { checkBoxedAnswer } from '../../core/math-answer.js';
import type {
  Environment,
  EnvTask,
  EpisodeContext,
  Evaluation,
  ResetResult,
  StepResult,
  ToolCallAction,
} from '../environment.js';
import type { Sandbox, SandboxSpec } from '../sandbox.js';
import { CODE_INTERPRETER_TOOL, runPython } from './code-interpreter.js';
import { actionKey, freshEpisodeState, readEpisodeState, writeEpisodeState } from './episode-state.js';
import { parseToolcallConfig, type ToolcallConfig, type ToolcallConfigInput } from './toolcall-config.js';
import { toolcallOpeningMessages } from './toolcall-prompts.js';
import { toolcallReward } from './toolcall-reward.js';
import { readToolcallTasks, type ToolcallTask, type ToolcallTaskData } from './toolcall-tasks.js';

export const TOOLCALL_KIND = 'toolcall';

export interface ToolcallEnvironmentOptions {
  config?: ToolcallConfigInput;
  /** The tasks to serve; default the bundled tasks.json. */
  tasks?: ToolcallTask[];
}

export class ToolcallEnvironment implements Environment<ToolcallTaskData> {
  readonly kind = TOOLCALL_KIND;
  readonly config: ToolcallConfig;
  private tasks: Promise<Map<string, ToolcallTask>> | null = null;
  private readonly givenTasks: ToolcallTask[] | undefined;

  constructor(options: ToolcallEnvironmentOptions = {}) {
    this.config = parseToolcallConfig(options.config);
    this.givenTasks = options.tasks;
  }

  private taskMap(): Promise<Map<string, ToolcallTask>> {
    this.tasks ??= (
      this.givenTasks !== undefined ? Promise.resolve(this.givenTasks) : readToolcallTasks()
    ).then((tasks) => new Map(tasks.map((task) => [task.id, task])));
    return this.tasks;
  }

  async listTasks(): Promise<string[]> {
    return [...(await this.taskMap()).keys()];
  }

  async loadTask(id: string): Promise<EnvTask<ToolcallTaskData>> {
    const task = (await this.taskMap()).get(id);
    if (task === undefined) throw new Error(`no toolcall task ${id}`);
    return { kind: TOOLCALL_KIND, id, data: { problem: task.problem, answer: task.answer } };
  }

  sandboxSpec(_task: EnvTask<ToolcallTaskData>): SandboxSpec {
    return {
      image: this.config.image,
      limits: { ...this.config.limits },
      network: false,
      user: 'agent',
      workdir: '/home/agent',
    };
  }

  async reset(context: EpisodeContext<ToolcallTaskData>): Promise<ResetResult> {
    await writeEpisodeState(requireSandbox(context), freshEpisodeState(context.task.id));
    return { messages: toolcallOpeningMessages(context.task.data.problem), tools: [CODE_INTERPRETER_TOOL] };
  }

  async step(context: EpisodeContext<ToolcallTaskData>, action: ToolCallAction): Promise<StepResult> {
    const sandbox = requireSandbox(context);
    const state = await readEpisodeState(sandbox, context.task.id);
    const key = actionKey(action);
    const finished = state.finished[key];
    if (finished !== undefined) return finished; // a retried step: the call already ran

    let result: StepResult;
    const invalid = invalidCallReason(action);
    if (invalid !== null) {
      state.invalidCalls += 1;
      result = { observation: `Error: ${invalid}`, done: false };
    } else if (state.toolCalls >= this.config.maxToolCalls) {
      result = {
        observation: `Error: the limit of ${this.config.maxToolCalls} tool calls is reached.`,
        done: true,
      };
    } else {
      const observation = await runPython(sandbox, String(action.arguments.code), {
        timeoutMs: this.config.pythonTimeoutMs,
        maxOutputChars: this.config.maxOutputChars,
      });
      state.toolCalls += 1;
      result = { observation, done: state.toolCalls >= this.config.maxToolCalls };
    }
    state.finished[key] = result;
    await writeEpisodeState(sandbox, state);
    return result;
  }

  async evaluate(context: EpisodeContext<ToolcallTaskData>, finalAnswer: string | null): Promise<Evaluation> {
    const state = await readEpisodeState(requireSandbox(context), context.task.id);
    const { answer, correct } = checkBoxedAnswer(finalAnswer, context.task.data.answer);
    const reward = toolcallReward(correct, state.toolCalls, this.config.reward);
    const verdict =
      answer === null ? 'no \\boxed{} answer' : `answer ${answer} is ${correct ? 'correct' : 'wrong'}`;
    return {
      reward,
      detail: `${verdict} (label ${context.task.data.answer}); ${state.toolCalls} tool calls, ${state.invalidCalls} invalid`,
    };
  }
}

/** Why a call cannot run (unknown tool, missing code), or null when it can. */
function invalidCallReason(action: ToolCallAction): string | null {
  if (action.name !== CODE_INTERPRETER_TOOL.function.name) {
    return `unknown tool "${action.name}"; the only tool is code_interpreter.`;
  }
  const code = action.arguments.code;
  if (typeof code !== 'string' || code.trim().length === 0) {
    return 'code_interpreter needs a non-empty string argument "code".';
  }
  return null;
}

function requireSandbox(context: EpisodeContext<ToolcallTaskData>): Sandbox {
  if (context.sandbox === null) throw new Error('the toolcall environment runs in a sandbox; none was given');
  return context.sandbox;
}
