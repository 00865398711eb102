// One rollout as episode activities, wherever it runs: as the body of its own rollout workflow
// (`envRolloutWorkflow`) or inside a batch workflow (`rolloutsAs: 'activities'`, no child workflow per
// rollout). `startEpisode` on the shared env queue acquires a sandbox on whichever host takes it and resets the
// episode there (a container-free episode runs to its end in the same activity); `runEpisode` on that host's
// own queue runs the loop, the evaluation and the release. The sandbox is ALWAYS released, cancelled or not.
import {
  ActivityCancellationType,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  proxyActivities,
} from '@temporalio/workflow';
import type { EnvHostActivities, EnvSharedActivities } from '../activities/env-activities.js';
import type { EpisodeInput, EpisodeRef } from '../activities/env-activity-types.js';
import type { EpisodeOutcome } from '../activities/episode-loop.js';
import type { EnvRolloutSettings } from '../core/rollout-settings.js';
import type { EnvRolloutResult } from './agentic-signals.js';
import { describeFailure, failedRolloutResult } from './rollout-results.js';

/**
 * The longest one attempt of an episode may take: every turn's policy call and host step at their limits,
 * plus the reset and the evaluation (the same bounds the step-by-step rollout had per activity).
 */
export function episodeBudgetMs(input: EnvRolloutSettings): number {
  return input.maxTurns * (input.policy.timeoutMs + input.hostTimeoutMs) + 2 * input.hostTimeoutMs;
}

export async function rolloutByEpisode(input: EnvRolloutSettings): Promise<EnvRolloutResult> {
  const episode: EpisodeInput = {
    rolloutId: input.rolloutId,
    env: input.env,
    taskId: input.taskId,
    leaseMs: input.leaseMs,
    policy: input.policy,
    maxTurns: input.maxTurns,
    maxParseErrors: input.maxParseErrors,
    contextBudgetTokens: input.contextBudgetTokens,
    ...(input.stepJudge && { stepJudge: input.stepJudge }),
  };
  const retry = {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 5,
  };
  // A host that does not take an attempt within hostTimeoutMs (gone for good) fails the rollout; a dead
  // attempt is noticed by its missing heartbeats and retried.
  const episodeTimeouts = {
    scheduleToStartTimeout: input.hostTimeoutMs,
    startToCloseTimeout: episodeBudgetMs(input),
    heartbeatTimeout: input.heartbeatTimeoutMs,
    retry,
  };
  const shared = proxyActivities<EnvSharedActivities>({
    taskQueue: input.envTaskQueue,
    ...episodeTimeouts,
    // A cancelled rollout waits for the start it asked for: one that made its container anyway answers with
    // the host, and the release below removes the container (TRY_CANCEL would drop that answer and leave the
    // container to its lease). A start no host has taken yet ends at once.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });

  const result = failedRolloutResult(input.rolloutId);
  const noteContainer = (id: string | null) => {
    if (id !== null && !result.containerIds.includes(id)) result.containerIds.push(id);
  };
  let hostQueue: string | null = null;
  let released = false;

  try {
    const started = await shared.startEpisode(episode);
    result.hostIds.push(started.hostId);
    noteContainer(started.containerId);
    hostQueue = started.hostQueue;
    // Cancelled while the start ran (it answers anyway, see above): the rollout is ABORTED, whatever it did.
    if (CancellationScope.current().consideredCancelled)
      throw new CancelledFailure('the rollout was cancelled while it started');
    let outcome: EpisodeOutcome | null = started.outcome;
    if (outcome === null) {
      // The rest runs on the host that holds the container; a host that restarts picks its queue up again.
      const host = proxyActivities<EnvHostActivities>({ taskQueue: hostQueue, ...episodeTimeouts });
      outcome = await host.runEpisode(episode);
    }
    released = outcome.released;
    for (const id of outcome.containerIds) noteContainer(id);
    result.status = outcome.status;
    result.reward = outcome.reward;
    result.steps = outcome.steps;
    result.sampleIds = outcome.sampleIds;
    result.parseErrors = outcome.parseErrors;
    result.detail = outcome.detail;
    result.stepScores = outcome.stepScores;
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
    // Release even when cancelled: this scope ignores the cancellation. Before the start answered, no host
    // is known; a container it may have created expires with its lease.
    const queue = hostQueue;
    if (queue !== null && !released) {
      await CancellationScope.nonCancellable(async () => {
        const releaser = proxyActivities<EnvHostActivities>({
          taskQueue: queue,
          scheduleToCloseTimeout: input.hostTimeoutMs,
          heartbeatTimeout: input.heartbeatTimeoutMs,
          retry,
        });
        const ref: EpisodeRef = {
          rolloutId: input.rolloutId,
          env: input.env,
          taskId: input.taskId,
          leaseMs: input.leaseMs,
        };
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
