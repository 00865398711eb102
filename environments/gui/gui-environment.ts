// The gui environment (OSWorld-style desktop tasks, spec 10.2): each episode gets a desktop container
// (Xvfb + openbox + the task's applications, started by `reset`), the policy acts through one tool,
// `computer_use` (xdotool on the container's display), and sees a screenshot after every action. The episode
// is scored by the task's OSWorld evaluator: +1 when it returns 1, else −1. Episode state lives in the
// container (episode-state.ts), so any worker can take the next step.

import type {
  Environment,
  EnvTask,
  EpisodeContext,
  EpisodeStep,
  Evaluation,
  ResetResult,
  StepResult,
  ToolCallAction,
} from '../environment.js';
import type { Sandbox, SandboxSpec } from '../sandbox.js';
import { taskFileInRoots } from '../task-files.js';
import {
  COMPUTER_USE_TOOL,
  COMPUTER_USE_TOOL_NAME,
  describeAction,
  parseComputerUseAction,
  xdotoolArgs,
} from './computer-use.js';
import { AGENT_HOME, DESKTOP_ENV, outputOf, runOnDesktop, screenshot, startDesktop } from './desktop.js';
import { actionKey, lastStepResult, readGuiEpisode, writeGuiEpisode } from './episode-state.js';
import { type GuiConfig, type GuiConfigInput, parseGuiConfig } from './gui-config.js';
import { guiOpeningMessages } from './gui-prompts.js';
import {
  BUNDLED_TASKS_DIR,
  type GuiTaskData,
  isTaskPath,
  readGuiTaskFile,
  scanGuiTasks,
  taskBaseDir,
} from './gui-tasks.js';
import { runEvaluator } from './osworld-evaluator.js';
import { runConfigSteps, type SetupLimits } from './task-setup.js';

export type { GuiConfigInput } from './gui-config.js';

export const GUI_KIND = 'gui';

export interface GuiEnvironmentOptions {
  config?: GuiConfigInput;
}

export class GuiEnvironment implements Environment<GuiTaskData> {
  readonly kind = GUI_KIND;
  readonly config: GuiConfig;
  private tasks: Promise<Map<string, GuiTaskData>> | null = null;

  constructor(options: GuiEnvironmentOptions = {}) {
    this.config = parseGuiConfig(options.config);
  }

  /** The bundled tasks and those of `tasksDir`; task files that cannot run here are left out. */
  private taskMap(): Promise<Map<string, GuiTaskData>> {
    this.tasks ??= (async () => {
      const tasks = (await scanGuiTasks(BUNDLED_TASKS_DIR)).tasks;
      if (this.config.tasksDir !== undefined) {
        for (const [id, data] of (await scanGuiTasks(this.config.tasksDir)).tasks) {
          if (tasks.has(id)) throw new Error(`gui task id ${id} of ${data.path} is also a bundled task`);
          tasks.set(id, data);
        }
      }
      return tasks;
    })();
    return this.tasks;
  }

  async listTasks(): Promise<string[]> {
    return [...(await this.taskMap()).keys()];
  }

  /**
   * The folders a task file named by its path may lie in: the shipped tasks, `tasksDir` and `taskFileRoots`.
   */
  taskFileRoots(): string[] {
    return [
      BUNDLED_TASKS_DIR,
      ...(this.config.tasksDir !== undefined ? [this.config.tasksDir] : []),
      ...this.config.taskFileRoots,
    ];
  }

  /** A task by id, or a task file by its path (an id ending in `.json`) inside the task file roots. */
  async loadTask(id: string): Promise<EnvTask<GuiTaskData>> {
    if (isTaskPath(id)) {
      const path = await taskFileInRoots(this.taskFileRoots(), id, 'gui.taskFileRoots');
      if (path === null) throw new Error(`no gui task file ${id}`);
      return { kind: GUI_KIND, id, data: await readGuiTaskFile(path) };
    }
    const data = (await this.taskMap()).get(id);
    if (data === undefined) throw new Error(`no gui task ${id}`);
    return { kind: GUI_KIND, id, data };
  }

  sandboxSpec(_task: EnvTask<GuiTaskData>): SandboxSpec {
    return {
      image: this.config.image,
      limits: { ...this.config.limits },
      network: false,
      user: 'agent',
      workdir: AGENT_HOME,
      env: DESKTOP_ENV,
    };
  }

  private get limits(): SetupLimits {
    return { startTimeoutMs: this.config.startTimeoutMs, commandTimeoutMs: this.config.commandTimeoutMs };
  }

  private screenshot(sandbox: Sandbox): Promise<string> {
    return screenshot(
      sandbox,
      this.config.screen,
      this.config.screenshotMaxWidth,
      this.config.commandTimeoutMs,
    );
  }

  async reset(context: EpisodeContext<GuiTaskData>): Promise<ResetResult> {
    const sandbox = requireSandbox(context);
    const { task } = context.task.data;
    await startDesktop(sandbox, this.config.screen, this.config.startTimeoutMs);
    const state = await readGuiEpisode(sandbox, context.task.id);
    if (state === null || !state.setupDone) {
      await runConfigSteps(sandbox, task.config, taskBaseDir(context.task.data), this.limits);
      await writeGuiEpisode(sandbox, { version: 1, taskId: context.task.id, setupDone: true, last: null });
    }
    await settle(this.config.settleMs);
    return {
      messages: guiOpeningMessages(task.instruction, await this.screenshot(sandbox)),
      tools: [COMPUTER_USE_TOOL],
    };
  }

  async step(context: EpisodeContext<GuiTaskData>, call: ToolCallAction): Promise<StepResult> {
    const sandbox = requireSandbox(context);
    const state = await readGuiEpisode(sandbox, context.task.id);
    if (state === null) throw new Error(`the gui episode in sandbox ${sandbox.id} was not reset`);
    const recorded = lastStepResult(state, call);
    if (recorded !== null) return recorded; // a retried step: the action already ran

    const result = await this.act(sandbox, call);
    state.last = { key: actionKey(call), result };
    await writeGuiEpisode(sandbox, state);
    return result;
  }

  /** Runs one call and observes the screen afterwards (except after terminate, which ends the episode). */
  private async act(sandbox: Sandbox, call: ToolCallAction): Promise<StepResult> {
    let text: string;
    if (call.name !== COMPUTER_USE_TOOL_NAME) {
      text = `Error: unknown tool "${call.name}"; the only tool is ${COMPUTER_USE_TOOL_NAME}.`;
    } else {
      const parsed = parseComputerUseAction(call.arguments);
      if (!parsed.ok) text = `Error: ${parsed.error}`;
      else {
        const { action } = parsed;
        if (action.action === 'terminate')
          return { observation: describeAction(action, this.config.screen), done: true };
        text = describeAction(action, this.config.screen);
        if (action.action === 'wait') {
          await settle(Math.min(action.time, this.config.maxWaitSeconds) * 1000);
        } else {
          const args = xdotoolArgs(action, this.config.screen) ?? [];
          if (args.length > 0) {
            const run = await runOnDesktop(sandbox, ['xdotool', ...args], this.config.commandTimeoutMs);
            if (run.exitCode !== 0) text = `Error: the action failed: ${outputOf(run)}`;
          }
        }
      }
    }
    await settle(this.config.settleMs);
    return { observation: text, images: [await this.screenshot(sandbox)], done: false };
  }

  async evaluate(context: EpisodeContext<GuiTaskData>, _finalAnswer: string | null): Promise<Evaluation> {
    const sandbox = requireSandbox(context);
    const finished = finishedWith(context.history ?? []);
    // As in the original, an episode that did not end with terminate(success) has given up (FAIL).
    const gaveUp = finished !== 'success';
    const outcome = await runEvaluator(
      sandbox,
      context.task.data.task.evaluator,
      taskBaseDir(context.task.data),
      gaveUp,
      this.limits,
    );
    const solved = outcome.score === 1;
    return {
      reward: solved ? this.config.reward.success : this.config.reward.failure,
      detail: `score ${outcome.score} (${finished === null ? 'no terminate' : `terminated: ${finished}`}); ${outcome.lines.join('; ')}`,
    };
  }
}

/** The status of the episode's last action when it was a terminate call, else null. */
export function finishedWith(history: readonly EpisodeStep[]): 'success' | 'failure' | null {
  const last = history.at(-1)?.action;
  if (last === undefined || last.name !== COMPUTER_USE_TOOL_NAME) return null;
  const parsed = parseComputerUseAction(last.arguments);
  return parsed.ok && parsed.action.action === 'terminate' ? parsed.action.status : null;
}

function settle(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

function requireSandbox(context: EpisodeContext<GuiTaskData>): Sandbox {
  if (context.sandbox === null) throw new Error('the gui environment runs in a sandbox; none was given');
  return context.sandbox;
}
