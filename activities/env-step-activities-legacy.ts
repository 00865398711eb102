// The one-step-per-activity API of rollouts started before the episode activities existed: acquireSandbox on
// the shared queue; policyStep, resetEpisode, envStep, evaluateEpisode, releaseSandbox and judgeStep on the
// host's queue. Kept under the same names so those rollouts' histories replay and the ones still running
// continue; each wraps one operation of the env host (activities/env-activities.ts) in a heartbeat.
import type { AcquireResult, EpisodeRef, HostStepResult } from './env-activity-types.js';
import { type PolicyActivities, whileAlive } from './policy-step.js';
import type { JudgeStepInput } from './step-judge.js';

/** What the env host does for one step, shared with its episode activities. */
export interface EnvStepOperations {
  acquire(ref: EpisodeRef): Promise<AcquireResult>;
  reset(ref: EpisodeRef): Promise<HostStepResult & { tools: number }>;
  stepTools(
    ref: EpisodeRef & { step: number },
  ): Promise<HostStepResult & { done: boolean; executed: number }>;
  evaluate(
    ref: EpisodeRef & { steps: number; finalAnswer: string | null },
  ): Promise<HostStepResult & { reward: number; detail: string }>;
  release(ref: EpisodeRef): Promise<void>;
  judge(input: JudgeStepInput): Promise<{ score: number }>;
  /** Renews the rollout's lease (heartbeats of the host-queue activities). */
  keepAlive(rolloutId: string): void;
}

export function createLegacyStepActivities(ops: EnvStepOperations, policy: PolicyActivities) {
  const { keepAlive } = ops;
  const shared = {
    /** Creates the rollout's container on this host (if its kind needs one) and names this host's queue. */
    async acquireSandbox(ref: EpisodeRef): Promise<AcquireResult> {
      return whileAlive(ref.rolloutId, undefined, () => ops.acquire(ref));
    },
  };

  const host = {
    ...policy,

    async resetEpisode(ref: EpisodeRef): Promise<HostStepResult & { tools: number }> {
      return whileAlive(ref.rolloutId, keepAlive, () => ops.reset(ref));
    },

    /** Runs the tool calls of policy step `step`, each once: a recorded observation is not run again. */
    async envStep(
      ref: EpisodeRef & { step: number },
    ): Promise<HostStepResult & { done: boolean; executed: number }> {
      return whileAlive(ref.rolloutId, keepAlive, () => ops.stepTools(ref));
    },

    async evaluateEpisode(
      ref: EpisodeRef & { steps: number; finalAnswer: string | null },
    ): Promise<HostStepResult & { reward: number; detail: string }> {
      return whileAlive(ref.rolloutId, keepAlive, () => ops.evaluate(ref));
    },

    /** Removes the rollout's container, if any; succeeds when it is already gone. */
    async releaseSandbox(ref: EpisodeRef): Promise<void> {
      return whileAlive(ref.rolloutId, undefined, () => ops.release(ref));
    },

    /** m judge votes on one step. */
    async judgeStep(input: JudgeStepInput): Promise<{ score: number }> {
      return whileAlive(input.rolloutId, keepAlive, () => ops.judge(input));
    },
  };

  return { shared, host };
}
