// The one contract every Track 2 environment kind implements (toolcall, terminal, swe, gui, and the
// container-free ones used for fan-out): acquire a sandbox → reset (task → first observation and tool schemas)
// → step(action) → observation → evaluate → reward → release. Environments run inside env-worker activities;
// workflows only see task ids, lease handles and small results.

import type { ChatMessage } from '../core/chat-messages.js';
import type { Sandbox, SandboxSpec } from './sandbox.js';

/** An OpenAI-style tool schema offered to the policy. */
export interface ToolSchema {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** One tool call the policy made (arguments already parsed from JSON). */
export interface ToolCallAction {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** A task as the environment kind defines it; `data` is the kind's own shape (validated by the kind). */
export interface EnvTask<Data = unknown> {
  kind: string;
  id: string;
  data: Data;
}

export interface ResetResult {
  /** The conversation the policy starts from: usually a system prompt and the task as the user message. */
  messages: ChatMessage[];
  tools: ToolSchema[];
}

export interface StepResult {
  /** The tool message content returned to the policy. */
  observation: string;
  /** The environment considers the episode over (e.g. a `submit` tool). */
  done: boolean;
}

export interface Evaluation {
  /** The outcome reward of the trajectory (kind-specific scale, e.g. ±1 or 2·passed/total − 1). */
  reward: number;
  /** What the evaluator found, for logs and the UI. */
  detail: string;
}

/** One executed tool call of an episode and what it returned. */
export interface EpisodeStep {
  action: ToolCallAction;
  observation: string;
}

export interface EpisodeContext<Data = unknown> {
  task: EnvTask<Data>;
  /** The episode's container, or null for kinds that need none. */
  sandbox: Sandbox | null;
  /**
   * The tool calls executed so far in this episode, oldest first, with their observations (read from the
   * sample store, so it survives a worker restart). Container-free kinds keep their episode state here;
   * kinds with a container may ignore it.
   */
  history?: readonly EpisodeStep[];
}

export interface Environment<Data = unknown> {
  readonly kind: string;
  /** Loads a task by id (fixtures shipped with the project, or a user's data set). */
  loadTask(id: string): Promise<EnvTask<Data>>;
  listTasks(): Promise<string[]>;
  /** The container the task needs, or null. Called before `reset`, on the env host that will hold it. */
  sandboxSpec(task: EnvTask<Data>): SandboxSpec | null;
  reset(context: EpisodeContext<Data>): Promise<ResetResult>;
  step(context: EpisodeContext<Data>, action: ToolCallAction): Promise<StepResult>;
  /** Scores the episode; `finalAnswer` is the policy's last message when it stopped calling tools. */
  evaluate(context: EpisodeContext<Data>, finalAnswer: string | null): Promise<Evaluation>;
}

/** Environment kinds by name; each implementation registers itself in environments/registry.ts. */
export type EnvironmentRegistry = ReadonlyMap<string, Environment>;
