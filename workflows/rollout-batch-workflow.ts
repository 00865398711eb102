// One branch of a training step's fan-out tree: runs at most 1,000 rollouts, `window` at a time, each as a
// child workflow or (`rolloutsAs: 'activities'`) as its episode activities right here, runs a FAILED rollout again (a new rollout id, so a fresh sandbox) up to `maxRetriesPerRollout`
// times, and returns one small result per slot. A rollout that overruns `rolloutTimeoutMs` counts as
// failed, so the step never waits on it. Progress goes to the training run by signal, a few times per batch.
// Given a `resultsKey`, the batch keeps its slot results in the store (an activity on the env queue) and
// returns only their counts, so the training run's history does not grow with its rollouts.
import {
  CancellationScope,
  CancelledFailure,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { AgenticActivities } from '../activities/agentic-activities.js';
import { envRolloutInputSchema } from '../core/rollout-settings.js';
import { describeZodError } from '../core/training-settings.js';
import { ENV_TASK_QUEUE } from '../temporal/task-queues.js';
import { envRolloutWorkflowId } from '../temporal/workflow-ids.js';
import { batchResultsWrite } from './activity-options.js';
import {
  type BatchProgress,
  batchStatusQuery,
  countSlotResults,
  type EnvRolloutInput,
  type EnvRolloutResult,
  type RolloutBatchInput,
  type RolloutBatchResult,
  rolloutProgressSignal,
  type SlotResult,
} from './agentic-signals.js';
import { envRolloutWorkflow } from './env-rollout-workflow.js';
import { rolloutByEpisode } from './episode-rollout.js';
import { describeFailure, failedRolloutResult } from './rollout-results.js';

/** Progress signals per batch: few enough that a parent with 1,000 batches stays under 10,000 signals. */
const REPORTS_PER_BATCH = 8;
/** A cancelled batch closes only once every lane has ended (its rollouts' sandboxes released). */
const LANES_SETTLE_PATCH = 'batch-lanes-settle';

export function rolloutIdFor(idPrefix: string, group: number, sample: number, attempt: number): string {
  return `${idPrefix}-g${group}-n${sample}-a${attempt}`;
}

/** The rollout as its own child workflow, `rollout-<rolloutId>`. */
async function rolloutAsChild(rollout: EnvRolloutInput, timeoutMs: number): Promise<EnvRolloutResult> {
  try {
    return await executeChild(envRolloutWorkflow, {
      workflowId: envRolloutWorkflowId(rollout.rolloutId),
      args: [rollout],
      // A closing batch asks its rollouts to stop, and they release their sandboxes.
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      workflowRunTimeout: timeoutMs,
    });
  } catch (error) {
    if (isCancellation(error)) throw error;
    // The child failed, timed out or was terminated: the same as a FAILED rollout.
    return failedRolloutResult(rollout.rolloutId, describeFailure(error));
  }
}

/**
 * The rollout's episode activities right in this batch: no workflow of its own (a child workflow costs more
 * history and more workflow tasks than the one activity a container-free episode needs). Past `timeoutMs`
 * its scope is cancelled, so it releases its sandbox, and it counts as FAILED, as a timed-out child does.
 */
async function rolloutInBatch(rollout: EnvRolloutInput, timeoutMs: number): Promise<EnvRolloutResult> {
  const parsed = envRolloutInputSchema.safeParse(rollout);
  if (!parsed.success)
    return failedRolloutResult(rollout.rolloutId, `invalid rollout input: ${describeZodError(parsed.error)}`);
  const batch = CancellationScope.current();
  const result = await CancellationScope.withTimeout(timeoutMs, () => rolloutByEpisode(parsed.data));
  if (batch.consideredCancelled) throw new CancelledFailure('the batch was cancelled');
  if (result.status === 'ABORTED')
    return {
      ...result,
      status: 'FAILED',
      reward: null,
      detail: `ran past its ${timeoutMs} ms: ${result.detail}`,
    };
  return result;
}

export async function rolloutBatchWorkflow(input: RolloutBatchInput): Promise<RolloutBatchResult> {
  const { slots } = input;
  const progress: BatchProgress = {
    step: input.step,
    batchIndex: input.batchIndex,
    total: slots.length,
    done: 0,
    failed: 0,
    inFlight: 0,
    retried: 0,
    rewardSum: 0,
    rewardCount: 0,
  };
  setHandler(batchStatusQuery, () => ({ ...progress }));
  const parent = input.reportTo ? getExternalWorkflowHandle(input.reportTo) : null;
  const reportEvery = Math.max(1, Math.ceil(slots.length / REPORTS_PER_BATCH));
  const report = async () => {
    if (!parent) return;
    try {
      await parent.signal(rolloutProgressSignal, { ...progress });
    } catch {
      // Progress is informational; a parent that is gone or continuing-as-new misses one update.
    }
  };

  const results: SlotResult[] = [];
  const runSlot = async (index: number): Promise<void> => {
    const slot = slots[index];
    if (!slot) return;
    let attempt = 0;
    for (;;) {
      const rolloutId = rolloutIdFor(input.idPrefix, slot.group, slot.sample, attempt);
      const rollout = { ...input.template, rolloutId, taskId: slot.taskId };
      const outcome =
        input.rolloutsAs === 'activities'
          ? await rolloutInBatch(rollout, input.rolloutTimeoutMs)
          : await rolloutAsChild(rollout, input.rolloutTimeoutMs);
      if (outcome.status === 'FAILED' && attempt < input.maxRetriesPerRollout) {
        attempt++;
        progress.retried++;
        continue;
      }
      results[index] = {
        group: slot.group,
        sample: slot.sample,
        taskId: slot.taskId,
        rolloutId,
        attempts: attempt + 1,
        status: outcome.status,
        reward: outcome.reward,
        steps: outcome.steps,
        stepScores: outcome.stepScores,
        containerIds: outcome.containerIds,
      };
      return;
    }
  };

  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < slots.length && !CancellationScope.current().consideredCancelled) {
      const index = next++;
      progress.inFlight++;
      try {
        await runSlot(index);
      } finally {
        progress.inFlight--;
      }
      const done = results[index];
      progress.done++;
      if (done && (done.status === 'FAILED' || done.status === 'ABORTED')) progress.failed++;
      if (done?.reward !== null && done?.reward !== undefined) {
        progress.rewardSum += done.reward;
        progress.rewardCount++;
      }
      if (progress.done % reportEvery === 0 && progress.done < slots.length) await report();
    }
  };
  const lanes = Math.max(1, Math.min(input.window, slots.length));
  const running = Array.from({ length: lanes }, lane);
  try {
    await Promise.all(running);
  } catch (error) {
    // The first lane to end cancelled must not close the batch: the other lanes' rollouts are still releasing
    // their sandboxes (in this batch, as activities), and a closed workflow never runs those releases.
    if (patched(LANES_SETTLE_PATCH)) await Promise.allSettled(running);
    throw error;
  }
  await report();
  const finished = results.filter((r): r is SlotResult => r !== undefined);
  if (input.resultsKey === undefined) return { batchIndex: input.batchIndex, results: finished };
  const bookkeeping = proxyActivities<AgenticActivities>(
    batchResultsWrite(input.template.envTaskQueue ?? ENV_TASK_QUEUE),
  );
  await bookkeeping.recordBatchResults({
    key: input.resultsKey,
    record: { batchIndex: input.batchIndex, results: finished },
  });
  return { batchIndex: input.batchIndex, resultsKey: input.resultsKey, counts: countSlotResults(finished) };
}
