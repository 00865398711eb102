// What agenticTrainingWorkflow answers to its status query and its pause and resume updates: the run's
// carried state and phase, and the step's rollouts folded over the progress its batches reported. Pure, so
// the fold is the same in a query and in an update (whose result the history records).
import type { AgenticTrainingSettings } from '../core/rollout-settings.js';
import type { AgenticCarry, AgenticPhase, AgenticStatus, BatchProgress } from './agentic-signals.js';

export interface AgenticStatusSources {
  input: Pick<AgenticTrainingSettings, 'runId' | 'env' | 'steps'>;
  state: AgenticCarry;
  phase: AgenticPhase;
  /** Rollouts in the step in progress (0 before it is planned). */
  total: number;
  /** The latest progress of each batch of the step, by batch index. */
  progress: ReadonlyMap<number, BatchProgress>;
}

export function agenticStatus({ input, state, phase, total, progress }: AgenticStatusSources): AgenticStatus {
  let done = 0;
  let failed = 0;
  let inFlight = 0;
  let retried = 0;
  let rewardSum = 0;
  let rewardCount = 0;
  for (const p of progress.values()) {
    done += p.done;
    failed += p.failed;
    inFlight += p.inFlight;
    retried += p.retried;
    rewardSum += p.rewardSum;
    rewardCount += p.rewardCount;
  }
  return {
    runId: input.runId,
    env: input.env,
    phase: state.paused && phase === 'waiting' ? 'paused' : phase,
    step: state.stepsCompleted,
    steps: input.steps,
    stepsCompleted: state.stepsCompleted,
    policyVersion: state.policyVersion,
    paused: state.paused,
    rollouts: { total, done, failed, inFlight, retried },
    meanReward: rewardCount > 0 ? rewardSum / rewardCount : null,
    lastStep: state.recentSteps.at(-1) ?? null,
    lastMetrics: state.lastMetrics,
  };
}
