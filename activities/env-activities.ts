// Environment activities of one env host. A rollout is two activities (one for container-free kinds):
// `startEpisode` runs on the shared `env` queue: whichever host takes it creates the rollout's container (if
// its kind needs one), resets the episode and answers with its own queue, `<env>-<hostId>`; `runEpisode`
// then runs the whole loop there (policy steps, tool calls, the optional step judge, the evaluation and the
// release; activities/episode-loop.ts), so every step reaches the same container. A container-free episode
// needs no particular host: `startEpisode` runs all of it at once. Each step is durable through its record in
// the sample store, so a retried attempt resumes where the last one stopped. The one-step-per-activity API of
// rollouts started before the episode activities existed is composed in from env-step-activities-legacy.ts.
//
// Leases: a container is labelled with an expiry and removed by the host's reaper once expired. Every
// activity on the host queue heartbeats, and with its heartbeats renews the lease of the rollout it works
// for, so a rollout that makes progress keeps its container and an abandoned one loses it.
//
// Restarts: a worker that restarts with the same host id finds the container again with `provider.attach`
// and resumes on it. If the container is gone, it creates a new one, resets it, and replays the tool calls
// recorded in the sample store (their recorded observations stay what the policy saw). Both are
// rollout-sandboxes.ts.

import { ApplicationFailure, CancelledFailure } from '@temporalio/activity';
import type { Environment, EnvironmentRegistry, EnvTask } from '../environments/environment.js';
import type { SandboxProvider } from '../environments/sandbox.js';
import type { SampleStore } from '../store/sample-store.js';
import { ENV_TASK_QUEUE, envHostTaskQueue } from '../temporal/task-queues.js';
import type { EpisodeProgress } from '../workflows/agentic-signals.js';
import type {
  AcquireResult,
  EpisodeInput,
  EpisodeRef,
  HostStepResult,
  StartEpisodeResult,
} from './env-activity-types.js';
import { createLegacyStepActivities } from './env-step-activities-legacy.js';
import { type EpisodeOutcome, runEpisodeLoop } from './episode-loop.js';
import type { Judge } from './judge-client.js';
import { createPolicyActivities, whileAlive } from './policy-step.js';
import {
  type EvaluationRecord,
  type ObservationRecord,
  type PlacementRecord,
  type ResetRecord,
  type RolloutStepRecord,
  readTranscript,
  rolloutKeys,
} from './rollout-records.js';
import { createRolloutSandboxes, evaluationRolloutId } from './rollout-sandboxes.js';
import { type JudgeStepInput, judgeRolloutStep } from './step-judge.js';

/** Observations longer than this are cut (the policy's context and the store stay bounded). */
export const MAX_OBSERVATION_CHARS = 16_384;

export interface EnvHostDependencies {
  /** Stable across restarts: a restarted host with the same id picks its rollouts up again. */
  hostId: string;
  /** Null on a host without containers: it serves container-free kinds only. */
  provider: SandboxProvider | null;
  registry: EnvironmentRegistry;
  store: SampleStore;
  /** For step-level judge votes (optional). */
  judge?: Judge;
  /** Bearer key for a policy behind the gateway (kept out of workflow inputs and histories). */
  policyApiKey?: string;
  /** Headers of calls to an engine policy (the engine token), kept out of histories too. */
  engineHeaders?: Record<string, string>;
  /** The shared queue (default `env`); the host's own queue is `<sharedTaskQueue>-<hostId>`. */
  sharedTaskQueue?: string;
}

function clip(text: string): string {
  return text.length <= MAX_OBSERVATION_CHARS
    ? text
    : `${text.slice(0, MAX_OBSERVATION_CHARS)}\n[... ${text.length - MAX_OBSERVATION_CHARS} characters cut]`;
}

export function createEnvActivities(deps: EnvHostDependencies) {
  const { hostId, provider, registry, store } = deps;
  const hostQueue = envHostTaskQueue(deps.sharedTaskQueue ?? ENV_TASK_QUEUE, hostId);
  const tasks = new Map<string, EnvTask>();
  const sandboxes = createRolloutSandboxes({ hostId, provider, store });
  const { keepAlive } = sandboxes;

  function environmentOf(kind: string): Environment {
    const environment = registry.get(kind);
    if (!environment)
      throw ApplicationFailure.nonRetryable(
        `unknown environment kind "${kind}"; this host has: ${[...registry.keys()].join(', ') || 'none'}`,
        'UnknownEnvironment',
      );
    return environment;
  }

  async function taskOf(environment: Environment, taskId: string): Promise<EnvTask> {
    const key = `${environment.kind}\u0000${taskId}`;
    const known = tasks.get(key);
    if (known) return known;
    let task: EnvTask;
    try {
      task = await environment.loadTask(taskId);
    } catch (error) {
      throw ApplicationFailure.nonRetryable(
        `${environment.kind} task "${taskId}" could not be loaded: ${(error as Error).message}`,
        'UnknownTask',
      );
    }
    if (tasks.size >= 10_000) tasks.delete(tasks.keys().next().value as string);
    tasks.set(key, task);
    return task;
  }

  async function episode(ref: EpisodeRef) {
    const environment = environmentOf(ref.env);
    const task = await taskOf(environment, ref.taskId);
    const sandbox = await sandboxes.sandboxFor(ref, environment, task);
    return { environment, task, sandbox, containerId: sandbox?.id ?? null };
  }

  const policy = createPolicyActivities({
    store,
    keepAlive,
    policyApiKey: deps.policyApiKey,
    engineHeaders: deps.engineHeaders,
  });

  async function acquire(ref: EpisodeRef): Promise<AcquireResult> {
    const environment = environmentOf(ref.env);
    const task = await taskOf(environment, ref.taskId);
    const spec = environment.sandboxSpec(task);
    let containerId: string | null = null;
    if (spec) {
      containerId = (await sandboxes.acquire(ref, ref.env, spec)).id;
    }
    const placement: PlacementRecord = {
      rolloutId: ref.rolloutId,
      hostId,
      containerId,
      acquiredAt: new Date().toISOString(),
    };
    await store.put(rolloutKeys.placement(ref.rolloutId), placement);
    return { hostId, hostQueue, containerId };
  }

  async function reset(ref: EpisodeRef): Promise<HostStepResult & { tools: number }> {
    const { environment, task, sandbox, containerId } = await episode(ref);
    const key = rolloutKeys.reset(ref.rolloutId);
    const recorded = await store.get<ResetRecord>(key);
    if (recorded) return { containerId, tools: recorded.tools.length };
    const result = await environment.reset({ task, sandbox, history: [] });
    const record: ResetRecord = { ...result, resetAt: new Date().toISOString() };
    await store.putIfAbsent(key, record);
    return { containerId, tools: result.tools.length };
  }

  /** When the episode's agent time limit ends (epoch ms), from its reset record; null without one. */
  async function deadlineOf(rolloutId: string): Promise<number | null> {
    const recorded = await store.get<ResetRecord>(rolloutKeys.reset(rolloutId));
    if (recorded?.agentTimeoutMs === undefined || recorded.resetAt === undefined) return null;
    return Date.parse(recorded.resetAt) + recorded.agentTimeoutMs;
  }

  /** Runs the tool calls of policy step `step`, each once: a recorded observation is not run again. */
  async function stepTools(
    ref: EpisodeRef & { step: number },
  ): Promise<HostStepResult & { done: boolean; executed: number }> {
    const record = await store.get<RolloutStepRecord>(rolloutKeys.step(ref.rolloutId, ref.step));
    if (record?.action.kind !== 'tools')
      throw ApplicationFailure.nonRetryable(
        `step ${ref.step} of ${ref.rolloutId} has no tool calls recorded`,
        'NoToolCalls',
      );
    const { environment, task, sandbox, containerId } = await episode(ref);
    const { history } = await readTranscript(store, ref.rolloutId, ref.step);
    const deadline = await deadlineOf(ref.rolloutId);
    let done = false;
    let executed = 0;
    for (const [index, call] of record.action.calls.entries()) {
      const key = rolloutKeys.observation(ref.rolloutId, ref.step, index);
      let observation = await store.get<ObservationRecord>(key);
      if (!observation) {
        const result = await environment.step(
          { task, sandbox, history, ...(deadline !== null && { deadline }) },
          call,
        );
        const fresh: ObservationRecord = {
          step: ref.step,
          call: index,
          toolCallId: call.id,
          name: call.name,
          observation: clip(result.observation),
          ...(result.images && result.images.length > 0 && { images: result.images }),
          done: result.done,
        };
        if (!(await store.putIfAbsent(key, fresh)))
          observation = (await store.get<ObservationRecord>(key)) ?? fresh;
        else observation = fresh;
      }
      history.push({ action: call, observation: observation.observation });
      executed++;
      if (observation.done) {
        done = true;
        break;
      }
    }
    return { containerId, done, executed };
  }

  async function evaluate(
    ref: EpisodeRef & { steps: number; finalAnswer: string | null },
  ): Promise<HostStepResult & { reward: number; detail: string }> {
    const key = rolloutKeys.evaluation(ref.rolloutId);
    const recorded = await store.get<EvaluationRecord>(key);
    const { environment, task, sandbox, containerId } = await episode(ref);
    if (recorded) return { containerId, reward: recorded.reward, detail: recorded.detail };
    const { history } = await readTranscript(store, ref.rolloutId, ref.steps);
    const evaluation = await environment.evaluate(
      { task, sandbox, history, ...(provider && { freshSandbox: sandboxes.freshSandboxFor(ref, provider) }) },
      ref.finalAnswer,
    );
    const record: EvaluationRecord = { ...evaluation, finalAnswer: ref.finalAnswer };
    await store.putIfAbsent(key, record);
    return { containerId, reward: evaluation.reward, detail: evaluation.detail };
  }

  /** Removes the rollout's container, if any; succeeds when it is already gone. */
  async function release(ref: EpisodeRef): Promise<void> {
    const environment = environmentOf(ref.env);
    const task = await taskOf(environment, ref.taskId);
    const held = sandboxes.held(ref.rolloutId);
    // Marked first: a step of this rollout still running (a cancelled rollout does not wait for it) then
    // finds the mark instead of re-creating the container this removes.
    await store.put(rolloutKeys.released(ref.rolloutId), {
      hostId,
      containerId: held?.id ?? null,
      releasedAt: new Date().toISOString(),
    });
    if (held || environment.sandboxSpec(task)) {
      const provider = sandboxes.requireProvider(ref.env);
      await provider.release(ref.rolloutId);
      // An evaluation container left by a worker that died mid-evaluation.
      await provider.release(evaluationRolloutId(ref.rolloutId));
    }
    sandboxes.forget(ref.rolloutId);
  }

  function judgeInput(input: EpisodeInput, step: number): JudgeStepInput | null {
    const settings = input.stepJudge;
    if (!settings) return null;
    return {
      rolloutId: input.rolloutId,
      step,
      votes: settings.votes,
      prompt: settings.prompt,
      aggregate: settings.aggregate,
      historySteps: settings.historySteps,
    };
  }

  /** The episode after its reset: the loop, the evaluation and the release (the sandbox is gone after). */
  async function runLoop(
    input: EpisodeInput,
    signal: AbortSignal,
    onProgress: (progress: EpisodeProgress) => void,
  ): Promise<EpisodeOutcome> {
    const checkCancelled = () => {
      if (signal.aborted) throw new CancelledFailure('the rollout was cancelled');
    };
    const outcome = await runEpisodeLoop(input, {
      policyStep: (step) =>
        policy.policyStep({
          rolloutId: input.rolloutId,
          step,
          policy: input.policy,
          contextBudgetTokens: input.contextBudgetTokens,
        }),
      envStep: (step) => stepTools({ ...input, step }),
      evaluate: (steps, finalAnswer) => evaluate({ ...input, steps, finalAnswer }),
      ...(input.stepJudge && {
        judge: async (step: number) =>
          (await judgeRolloutStep(store, deps.judge, judgeInput(input, step) as JudgeStepInput, hostId))
            .score,
      }),
      deadline: () => deadlineOf(input.rolloutId),
      checkCancelled,
      onProgress,
    });
    await release(input);
    return { ...outcome, released: true };
  }

  const legacy = createLegacyStepActivities(
    {
      acquire,
      reset,
      stepTools,
      evaluate,
      release,
      judge: async (input) => ({ score: (await judgeRolloutStep(store, deps.judge, input, hostId)).score }),
      keepAlive,
    },
    policy,
  );

  const shared = {
    ...legacy.shared,

    /**
     * Acquires and resets the rollout on this host. A container-free episode then runs to its end right here
     * (any host can resume it from the store); one with a container continues with `runEpisode` on this
     * host's queue. Cancelled after its container exists, it still answers, so the workflow releases it.
     */
    async startEpisode(input: EpisodeInput): Promise<StartEpisodeResult> {
      return whileAlive(input.rolloutId, keepAlive, async (signal, report) => {
        const placement = await acquire(input);
        const environment = environmentOf(input.env);
        const container = environment.sandboxSpec(await taskOf(environment, input.taskId)) !== null;
        if (container) {
          if (!signal.aborted) await reset(input);
          return { ...placement, outcome: null };
        }
        try {
          await reset(input);
          return { ...placement, outcome: await runLoop(input, signal, report) };
        } catch (error) {
          // A cancelled container-free rollout never learns its host: the release is recorded here.
          if (signal.aborted) await release(input);
          throw error;
        }
      });
    },
  };

  const host = {
    ...legacy.host,

    /** The rest of an episode whose container this host holds: the loop, the evaluation and the release. */
    async runEpisode(input: EpisodeInput): Promise<EpisodeOutcome> {
      return whileAlive(input.rolloutId, keepAlive, (signal, report) => runLoop(input, signal, report));
    },
  };

  return { hostQueue, shared, host, keepAlive };
}

export type EnvActivities = ReturnType<typeof createEnvActivities>;
export type EnvSharedActivities = EnvActivities['shared'];
export type EnvHostActivities = EnvActivities['host'];
