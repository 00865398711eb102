// The rollout as one activity per step (acquire, reset, policy step, env step, evaluate, release, step judge),
// as envRolloutWorkflow ran before its episode activities (env-rollout-workflow.ts). Kept so that rollouts
// started then replay and finish on today's workers; new rollouts never take this path. It can go once no
// such rollout is open (then `deprecatePatch(EPISODE_ACTIVITIES_PATCH)` in envRolloutWorkflow).
import {
  ActivityCancellationType,
  CancellationScope,
  isCancellation,
  proxyActivities,
} from '@temporalio/workflow';
import type { EnvHostActivities, EnvSharedActivities } from '../activities/env-activities.js';
import type { EpisodeRef } from '../activities/env-activity-types.js';
import type { EnvRolloutSettings } from '../core/rollout-settings.js';
import type { EnvRolloutResult, RolloutStatus } from './agentic-signals.js';
import { describeFailure, failedRolloutResult } from './rollout-results.js';

export async function rolloutStepByStep(input: EnvRolloutSettings): Promise<EnvRolloutResult> {
  const ref: EpisodeRef = {
    rolloutId: input.rolloutId,
    env: input.env,
    taskId: input.taskId,
    leaseMs: input.leaseMs,
  };
  const retry = {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 5,
  };
  const acquire = proxyActivities<EnvSharedActivities>({
    taskQueue: input.envTaskQueue,
    scheduleToCloseTimeout: input.hostTimeoutMs,
    startToCloseTimeout: '15 minutes',
    heartbeatTimeout: input.heartbeatTimeoutMs,
    retry,
    // A cancelled rollout waits for the acquire it started: one that made its container anyway answers with
    // the host, and the release below removes the container (TRY_CANCEL, the default on the wire, would drop
    // that answer and leave the container to its lease). An acquire no host has taken yet ends at once.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });

  const result = failedRolloutResult(input.rolloutId);
  const noteContainer = (id: string | null) => {
    if (id !== null && !result.containerIds.includes(id)) result.containerIds.push(id);
  };
  let host: ReturnType<typeof proxyActivities<EnvHostActivities>> | null = null;
  const judged: Promise<number>[] = [];

  try {
    const placement = await acquire.acquireSandbox(ref);
    result.hostIds.push(placement.hostId);
    noteContainer(placement.containerId);
    // Everything else runs on the host that holds the sandbox; a host that restarts picks its queue up again.
    host = proxyActivities<EnvHostActivities>({
      taskQueue: placement.hostQueue,
      scheduleToCloseTimeout: input.hostTimeoutMs,
      heartbeatTimeout: input.heartbeatTimeoutMs,
      retry,
    });
    const policy = proxyActivities<EnvHostActivities>({
      taskQueue: placement.hostQueue,
      startToCloseTimeout: input.policy.timeoutMs,
      scheduleToCloseTimeout: input.hostTimeoutMs + input.policy.timeoutMs,
      heartbeatTimeout: input.heartbeatTimeoutMs,
      retry,
    });
    const hostCalls = host;
    const judge = (step: number) => {
      if (!input.stepJudge) return;
      // Votes run beside the next steps (spec 10.1: dispatched right after the tool results); a failed
      // judge counts as no signal.
      judged[step] = hostCalls
        .judgeStep({ rolloutId: input.rolloutId, step, votes: input.stepJudge.votes })
        .then((r) => r.score)
        .catch(() => 0);
    };

    noteContainer((await host.resetEpisode(ref)).containerId);
    let status: RolloutStatus | null = null;
    let finalAnswer: string | null = null;
    for (let step = 0; step < input.maxTurns && status === null; step++) {
      const out = await policy.policyStep({
        rolloutId: input.rolloutId,
        step,
        policy: input.policy,
        contextBudgetTokens: input.contextBudgetTokens,
      });
      result.sampleIds.push(out.sampleId);
      result.steps++;
      if (out.kind === 'final') {
        finalAnswer = out.finalAnswer;
        // An answer cut off at the token limit is still evaluated, but reported as truncated.
        status = out.finishReason === 'length' ? 'TRUNCATED' : 'COMPLETED';
        result.detail =
          status === 'COMPLETED' ? 'final answer' : 'the final answer was cut off at the token limit';
      } else if (out.kind === 'invalid') {
        result.parseErrors++;
        judge(step);
        if (result.parseErrors >= input.maxParseErrors) {
          status = 'FAILED';
          result.detail = `${result.parseErrors} parse errors; the last: ${out.error}`;
        }
      } else {
        const stepped = await host.envStep({ ...ref, step });
        noteContainer(stepped.containerId);
        judge(step);
        if (stepped.done) {
          status = 'COMPLETED';
          result.detail = 'the environment ended the episode';
        }
      }
    }
    if (status === null) {
      status = 'TRUNCATED';
      result.detail = `stopped after ${input.maxTurns} turns`;
    }
    result.status = status;
    if (status !== 'FAILED') {
      const evaluation = await host.evaluateEpisode({ ...ref, steps: result.steps, finalAnswer });
      noteContainer(evaluation.containerId);
      result.reward = evaluation.reward;
      result.detail = `${result.detail}; ${evaluation.detail}`;
    }
    if (input.stepJudge) {
      const scores: number[] = [];
      for (let step = 0; step < result.steps; step++) scores.push(await (judged[step] ?? Promise.resolve(0)));
      result.stepScores = scores;
    }
  } catch (error) {
    result.reward = null;
    if (isCancellation(error)) {
      result.status = 'ABORTED';
      result.detail = 'cancelled';
    } else {
      result.status = 'FAILED';
      result.detail = describeFailure(error);
    }
  } finally {
    // Release even when cancelled: this scope ignores the cancellation. Before the acquire answered, no
    // host is known; a container it may have created expires with its lease.
    const releaser = host;
    if (releaser !== null) {
      await CancellationScope.nonCancellable(async () => {
        try {
          await releaser.releaseSandbox(ref);
        } catch (error) {
          result.detail = `${result.detail}; release failed (the lease will expire): ${describeFailure(error)}`;
        }
      });
    }
  }
  return result;
}
