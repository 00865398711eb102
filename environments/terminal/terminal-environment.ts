// The terminal environment (terminal-bench tasks, spec 10.1): the policy works in the task's container through
// shell tools (terminal-tools.ts); at the end the task's pytest tests are copied in and run, and the reward is
// 2 · passed/total − 1. Steps keep their state in the container (terminal-episode-state.ts), so any worker can
// take the next one.

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
import { ensureTaskImage, taskImageName } from './task-image.js';
import { parseTerminalConfig, type TerminalConfig, type TerminalConfigInput } from './terminal-config.js';
import {
  callKey,
  freshTerminalEpisode,
  readTerminalEpisode,
  writeTerminalEpisode,
} from './terminal-episode-state.js';
import { evaluateTerminalTask } from './terminal-evaluation.js';
import { terminalOpeningMessages } from './terminal-prompts.js';
import { readTaskFile, TerminalTaskCatalog, type TerminalTaskData } from './terminal-tasks.js';
import { runTerminalTool, TERMINAL_TOOLS } from './terminal-tools.js';

export const TERMINAL_KIND = 'terminal';

/** A tasks folder for hosts started without options (`openclaw-rl env-worker`); options.terminal.tasksDir wins. */
export const TASKS_DIR_VARIABLE = 'OPENCLAW_TERMINAL_TASKS_DIR';

/** Where setup.sh is copied to run at reset. */
const SETUP_SCRIPT = '/run/openclaw/terminal-setup.sh';

export interface TerminalEnvironmentOptions {
  config?: TerminalConfigInput;
  /** The folder of bundled tasks; default environments/terminal/tasks. */
  bundledDir?: string;
}

export class TerminalEnvironment implements Environment<TerminalTaskData> {
  readonly kind = TERMINAL_KIND;
  readonly config: TerminalConfig;
  private readonly catalog: TerminalTaskCatalog;

  constructor(options: TerminalEnvironmentOptions = {}) {
    this.config = parseTerminalConfig(options.config);
    this.catalog = new TerminalTaskCatalog({
      tasksDir: this.config.tasksDir ?? (process.env[TASKS_DIR_VARIABLE] || undefined),
      bundledDir: options.bundledDir,
    });
  }

  listTasks(): Promise<string[]> {
    return this.catalog.list();
  }

  /** Reads the task folder (a name or an absolute path) and builds its image if it brings a Dockerfile. */
  async loadTask(id: string): Promise<EnvTask<TerminalTaskData>> {
    const data = await this.catalog.load(id);
    if (this.config.buildTaskImages) await ensureTaskImage(data, this.config.image, this.config.baseImages);
    return { kind: TERMINAL_KIND, id, data };
  }

  sandboxSpec(task: EnvTask<TerminalTaskData>): SandboxSpec {
    // The image's working directory (terminal-bench's WORKDIR /app; the default image's /home/agent), and its
    // user where that is not root (the default image's `agent`), else a non-root user owning that directory.
    return {
      image: taskImageName(task.data, this.config.image),
      limits: { ...this.config.limits },
      network: false,
      runAs: this.config.runAs,
    };
  }

  async reset(context: EpisodeContext<TerminalTaskData>): Promise<ResetResult> {
    const sandbox = requireSandbox(context);
    const task = context.task.data;
    if (task.hasSetup) await this.runSetup(sandbox, task);
    await writeTerminalEpisode(sandbox, freshTerminalEpisode(task.folder));
    return {
      messages: terminalOpeningMessages(task.name, task.instruction),
      tools: TERMINAL_TOOLS,
      // terminal-bench's max_agent_timeout_sec: the policy's part of the episode ends then.
      ...(this.config.enforceAgentTimeout && { agentTimeoutMs: task.maxAgentTimeoutSec * 1000 }),
    };
  }

  private async runSetup(sandbox: Sandbox, task: TerminalTaskData): Promise<void> {
    await sandbox.writeFile(SETUP_SCRIPT, await readTaskFile(task, 'setup.sh'));
    const result = await sandbox.exec(['bash', SETUP_SCRIPT], {
      timeoutMs: this.config.setupTimeoutMs,
      ...(task.setupUser === 'root' && { user: 'root' }),
    });
    if (result.exitCode !== 0 || result.timedOut) {
      const output = `${result.stdout}${result.stderr}`.trim().slice(-600);
      const how = result.timedOut ? 'timed out' : `failed with exit code ${result.exitCode}`;
      throw new Error(`setup.sh of terminal task ${task.name} ${how}: ${output}`);
    }
  }

  async step(context: EpisodeContext<TerminalTaskData>, action: ToolCallAction): Promise<StepResult> {
    const sandbox = requireSandbox(context);
    const state = await readTerminalEpisode(sandbox, context.task.data.folder);
    const key = callKey(action);
    const finished = state.finished[key];
    if (finished !== undefined) return { observation: finished, done: false }; // a retried step: it already ran
    const observation = await runTerminalTool(sandbox, action, {
      defaultTimeoutMs: this.config.commandTimeoutMs,
      maxTimeoutMs: this.config.maxCommandTimeoutMs,
      maxOutputChars: this.config.maxOutputChars,
      ...(context.deadline !== undefined && { deadline: context.deadline }),
    });
    state.toolCalls += 1;
    state.finished[key] = observation;
    await writeTerminalEpisode(sandbox, state);
    return { observation, done: false };
  }

  async evaluate(
    context: EpisodeContext<TerminalTaskData>,
    _finalAnswer: string | null,
  ): Promise<Evaluation> {
    const sandbox = requireSandbox(context);
    const state = await readTerminalEpisode(sandbox, context.task.data.folder);
    const evaluation = await evaluateTerminalTask(sandbox, context.task.data, this.config.evalTimeoutCapSec);
    return { reward: evaluation.reward, detail: `${evaluation.detail}; ${state.toolCalls} tool calls` };
  }
}

function requireSandbox(context: EpisodeContext<TerminalTaskData>): Sandbox {
  if (context.sandbox === null) throw new Error('the terminal environment runs in a sandbox; none was given');
  return context.sandbox;
}
