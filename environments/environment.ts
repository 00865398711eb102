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
  /**
   * The most tool calls one policy turn may make (the swe kind allows one command per turn); a turn with
   * more is a parse error. Unset: no limit.
   */
  maxCallsPerTurn?: number;
  /**
   * How long the policy's part of the episode may last, from the reset on (terminal-bench's
   * `max_agent_timeout_sec`). Past it no further policy step is asked for, a tool call in flight is cut at
   * the limit, and the episode is evaluated as TRUNCATED. Unset: only maxTurns bounds the episode.
   */
  agentTimeoutMs?: number;
}

export interface StepResult {
  /** The tool message content returned to the policy. */
  observation: string;
  /**
   * Images shown with the observation (the gui kind's screenshots), as `data:image/png;base64,...` URLs.
   * They are stored with the observation and sent as `image_url` parts of the tool message.
   */
  images?: string[];
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
  /**
   * When the episode's agent time limit ends (epoch milliseconds; see `ResetResult.agentTimeoutMs`): a tool
   * call should not run past it. Unset: no limit.
   */
  deadline?: number;
  /**
   * Runs `use` in a new container of `spec` and removes it afterwards (the swe kind evaluates a patch in a
   * fresh container). Given by env hosts with a sandbox provider; the container carries a lease like any
   * other, so a worker that dies mid-way leaves nothing behind.
   */
  freshSandbox?: <T>(spec: SandboxSpec, use: (sandbox: Sandbox) => Promise<T>) => Promise<T>;
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
