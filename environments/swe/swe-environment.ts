// The swe environment (SWE-bench / SWE-Gym with mini-swe-agent's interface, spec 10.3): the policy gets an
// issue and the repository at its base commit in /testbed of the instance's image, and runs one bash command
// per turn. The submission command ends the episode; its output is the patch (without it, the container's
// `git diff` is). The patch is scored in a FRESH container of the same image: applied, the row's tests run,
// +1 when every FAIL_TO_PASS and PASS_TO_PASS test passes, −1 otherwise.

import { dirname, resolve } from 'node:path';
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
import { taskFileInRoots } from '../task-files.js';
import { BASH_TOOL, runBash } from './bash-tool.js';
import { parseSweConfig, type SweConfig, type SweConfigInput } from './swe-config.js';
import {
  clearEpisode,
  readFinishedStep,
  readSubmission,
  recordFinishedStep,
  recordSubmission,
} from './swe-episode-state.js';
import { evaluatePatch } from './swe-evaluation.js';
import type { SweInstance } from './swe-instance.js';
import {
  BUNDLED_INSTANCES,
  loadInstanceFromFile,
  readSweInstances,
  taskFileReference,
} from './swe-instances.js';
import { formatObservation } from './swe-observation.js';
import { patchProblem, submittedPatch } from './swe-patch.js';
import { sweOpeningMessages } from './swe-prompts.js';
import { shellQuote } from './test-outcomes.js';

export const SWE_KIND = 'swe';

export interface SweEnvironmentOptions {
  config?: SweConfigInput;
  /** The instances to serve instead of the bundled ones (the options' instancesFile is still added). */
  instances?: SweInstance[];
}

export class SweEnvironment implements Environment<SweInstance> {
  readonly kind = SWE_KIND;
  readonly config: SweConfig;
  private readonly givenInstances: SweInstance[] | undefined;
  private instances: Promise<Map<string, SweInstance>> | null = null;

  constructor(options: SweEnvironmentOptions = {}) {
    this.config = parseSweConfig(options.config);
    this.givenInstances = options.instances;
  }

  private instanceMap(): Promise<Map<string, SweInstance>> {
    this.instances ??= this.readInstances();
    // A failed read is not cached: a fixed file is picked up by the next task.
    this.instances.catch(() => {
      this.instances = null;
    });
    return this.instances;
  }

  private async readInstances(): Promise<Map<string, SweInstance>> {
    const naming = this.config.imageNaming;
    const all = [...(this.givenInstances ?? (await readSweInstances(BUNDLED_INSTANCES, naming)))];
    if (this.config.instancesFile !== undefined)
      all.push(...(await readSweInstances(this.config.instancesFile, naming)));
    const byId = new Map<string, SweInstance>();
    for (const instance of all) {
      if (byId.has(instance.instanceId))
        throw new Error(`swe instance ${instance.instanceId} is defined twice (bundled and instancesFile?)`);
      byId.set(instance.instanceId, instance);
    }
    return byId;
  }

  async listTasks(): Promise<string[]> {
    return [...(await this.instanceMap()).keys()];
  }

  async loadTask(id: string): Promise<EnvTask<SweInstance>> {
    const reference = taskFileReference(id);
    const instance =
      reference !== null
        ? await loadInstanceFromFile(
            { ...reference, path: await this.confinedTaskFile(reference.path) },
            this.config.imageNaming,
          )
        : (await this.instanceMap()).get(id);
    if (instance === undefined)
      throw new Error(
        `no swe instance ${id}; give a bundled or instancesFile id, "rows.jsonl#<instance_id>" or "row.json"`,
      );
    return { kind: SWE_KIND, id, data: instance };
  }

  /**
   * The folders a task id naming a row file may point into: the shipped instances' folder, the folder of
   * `instancesFile`, and `taskFileRoots`.
   */
  taskFileRoots(): string[] {
    return [
      dirname(BUNDLED_INSTANCES),
      ...(this.config.instancesFile !== undefined ? [dirname(this.config.instancesFile)] : []),
      ...this.config.taskFileRoots,
    ];
  }

  /** The real path of a row file a task id names; it must lie inside the task file roots, links followed. */
  private async confinedTaskFile(path: string): Promise<string> {
    return (await taskFileInRoots(this.taskFileRoots(), path, 'swe.taskFileRoots')) ?? resolve(path);
  }

  sandboxSpec(task: EnvTask<SweInstance>): SandboxSpec {
    return {
      image: task.data.image,
      limits: { ...this.config.limits },
      network: false,
      ...(this.config.user !== undefined && { user: this.config.user }),
      // SWE-bench's images run as root: the policy's commands run as a non-root user owning /testbed.
      runAs: this.config.runAs,
      workdir: this.config.workdir,
    };
  }

  async reset(context: EpisodeContext<SweInstance>): Promise<ResetResult> {
    await clearEpisode(requireSandbox(context));
    return {
      messages: sweOpeningMessages(context.task.data.problemStatement, this.config.workdir),
      tools: [BASH_TOOL],
      maxCallsPerTurn: 1,
    };
  }

  async step(context: EpisodeContext<SweInstance>, action: ToolCallAction): Promise<StepResult> {
    const sandbox = requireSandbox(context);
    const finished = await readFinishedStep(sandbox, action);
    if (finished !== null) return finished; // a retried step: the command already ran

    // The history holds the calls before this one; one call per turn, so it counts the turns used.
    const turnsLeft =
      context.history !== undefined ? this.config.stepLimit - (context.history.length + 1) : null;
    let result: StepResult;
    const command = action.arguments.command;
    if (action.name !== BASH_TOOL.function.name) {
      result = this.errorResult(`unknown tool "${action.name}"; the only tool is bash.`, turnsLeft);
    } else if (typeof command !== 'string' || command.trim() === '') {
      result = this.errorResult('bash needs a non-empty string argument "command".', turnsLeft);
    } else {
      const outcome = await runBash(sandbox, command, {
        workdir: this.config.workdir,
        timeoutMs: this.config.commandTimeoutMs,
      });
      const patch = submittedPatch(outcome.output);
      if (patch !== null) await recordSubmission(sandbox, patch);
      result = {
        observation: formatObservation(
          outcome,
          this.config.maxOutputChars,
          patch !== null ? null : turnsLeft,
        ),
        done: patch !== null,
      };
    }
    await recordFinishedStep(sandbox, action, result);
    return result;
  }

  private errorResult(message: string, turnsLeft: number | null): StepResult {
    return {
      observation: formatObservation(
        { returncode: -1, output: message },
        this.config.maxOutputChars,
        turnsLeft,
      ),
      done: false,
    };
  }

  async evaluate(context: EpisodeContext<SweInstance>, _finalAnswer: string | null): Promise<Evaluation> {
    const { resolved, unresolved } = this.config.reward;
    const instance = context.task.data;
    const sandbox = requireSandbox(context);
    const submitted = await readSubmission(sandbox);
    const patch = submitted ?? (await this.containerDiff(sandbox, instance));
    const source = submitted !== null ? 'submitted patch' : 'no submission; the container diff';
    const problem = patchProblem(patch);
    if (problem !== null) return { reward: unresolved, detail: `${source}: ${problem}` };
    if (context.freshSandbox === undefined)
      throw new Error('the swe environment evaluates in a fresh container, and this host offers none');
    // The row's eval script may reinstall the package into the image's environment: it runs as the image's
    // user (root without capabilities in SWE-bench's images), not the policy's.
    const evaluationSpec: SandboxSpec = { ...this.sandboxSpec(context.task), runAs: 'image' };
    const verdict = await context.freshSandbox(evaluationSpec, (fresh) =>
      evaluatePatch(fresh, instance, patch, {
        workdir: this.config.workdir,
        timeoutMs: this.config.evalTimeoutMs,
        testCommand: this.config.testCommand,
      }),
    );
    return { reward: verdict.resolved ? resolved : unresolved, detail: `${source}: ${verdict.detail}` };
  }

  /** Every change in the agent's container against the base commit (HEAD where that commit is missing). */
  private async containerDiff(sandbox: Sandbox, instance: SweInstance): Promise<string> {
    const base = shellQuote(instance.baseCommit);
    const outcome = await runBash(
      sandbox,
      `git add -A >/dev/null && { git diff --cached ${base} 2>/dev/null || git diff --cached HEAD; }`,
      { workdir: this.config.workdir, timeoutMs: this.config.commandTimeoutMs },
    );
    if (outcome.returncode !== 0)
      throw new Error(`git diff failed in ${sandbox.id}: ${outcome.output.slice(-500)}`);
    return outcome.output;
  }
}

function requireSandbox(context: EpisodeContext<SweInstance>): Sandbox {
  if (context.sandbox === null) throw new Error('the swe environment runs in a container; none was given');
  return context.sandbox;
}
