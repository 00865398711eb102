// One episode's loop, run inside a single activity on the env host (activities/env-activities.ts,
// `runEpisode`; container-free kinds inside `startEpisode`): policy step → env step up to maxTurns, the
// optional step judge beside the following steps, then the evaluation. Every step is durable through its
// records in the sample store, not through the workflow history: a retried attempt runs the same loop again,
// a recorded policy step returns its record instead of sampling, a recorded tool call does not run again, so
// the attempt resumes where the last one stopped. The statuses are those of docs/track2.md.

import { ApplicationFailure } from '@temporalio/activity';
import type { EpisodeProgress, RolloutStatus } from '../workflows/agentic-signals.js';
import type { PolicyStepResult } from './policy-step.js';

export interface EpisodeOutcome {
  /** COMPLETED, TRUNCATED or FAILED (a cancelled episode throws; the workflow calls it ABORTED). */
  status: RolloutStatus;
  /** The evaluated reward; null when the episode FAILED. */
  reward: number | null;
  steps: number;
  sampleIds: string[];
  parseErrors: number;
  detail: string;
  stepScores: number[] | null;
  /** Every container the episode's steps ran in (a re-created one appears too). */
  containerIds: string[];
  /** The sandbox was released at the end: the workflow has nothing left to release. */
  released: boolean;
}

export interface EpisodeOperations {
  policyStep(step: number): Promise<PolicyStepResult>;
  envStep(step: number): Promise<{ containerId: string | null; done: boolean }>;
  evaluate(
    steps: number,
    finalAnswer: string | null,
  ): Promise<{ containerId: string | null; reward: number; detail: string }>;
  /** The step judge's score of a step; absent without a step judge. */
  judge?: (step: number) => Promise<number>;
  /** When the agent time limit ends (epoch ms), read after the reset; null without one. */
  deadline(): Promise<number | null>;
  /** Throws when the activity was cancelled (checked between steps). */
  checkCancelled(): void;
  /** Told the turns done and what the loop is on now (the activity heartbeats it, `rollout` draws it). */
  onProgress?: (progress: EpisodeProgress) => void;
}

/** Tries of one operation inside an attempt before the attempt fails (the activity's retries come on top). */
const TRIES_PER_OPERATION = 3;

/** Runs `operation`, again after 1 s and 2 s when it fails retryably; non-retryable failures pass at once. */
export async function withRetries<T>(operation: () => Promise<T>, checkCancelled: () => void): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      const final = error instanceof ApplicationFailure && error.nonRetryable;
      if (final || attempt >= TRIES_PER_OPERATION) throw error;
      checkCancelled();
      await new Promise((resolve) => setTimeout(resolve, 1000 * attempt));
      checkCancelled();
    }
  }
}

export async function runEpisodeLoop(
  limits: { maxTurns: number; maxParseErrors: number },
  ops: EpisodeOperations,
): Promise<Omit<EpisodeOutcome, 'released'>> {
  const containerIds: string[] = [];
  const noteContainer = (id: string | null) => {
    if (id !== null && !containerIds.includes(id)) containerIds.push(id);
  };
  const sampleIds: string[] = [];
  const judged: Promise<number>[] = [];
  const judge = (step: number) => {
    // Votes run beside the next steps (spec 10.1: dispatched right after the tool results); a failed judge
    // counts as no signal.
    if (ops.judge) judged[step] = ops.judge(step).catch(() => 0);
  };
  const retrying = <T>(operation: () => Promise<T>) => withRetries(operation, ops.checkCancelled);
  const deadline = await ops.deadline();

  let status: RolloutStatus | null = null;
  let finalAnswer: string | null = null;
  let parseErrors = 0;
  let detail = '';
  let steps = 0;
  for (let step = 0; step < limits.maxTurns && status === null; step++) {
    ops.checkCancelled();
    if (deadline !== null && Date.now() >= deadline) {
      status = 'TRUNCATED';
      detail = `the agent time limit ended after ${steps} turns`;
      break;
    }
    ops.onProgress?.({ turns: steps, phase: 'policyStep' });
    const out = await retrying(() => ops.policyStep(step));
    sampleIds.push(out.sampleId);
    steps++;
    if (out.kind === 'final') {
      finalAnswer = out.finalAnswer;
      // An answer cut off at the token limit is still evaluated, but reported as truncated.
      status = out.finishReason === 'length' ? 'TRUNCATED' : 'COMPLETED';
      detail = status === 'COMPLETED' ? 'final answer' : 'the final answer was cut off at the token limit';
    } else if (out.kind === 'invalid') {
      parseErrors++;
      judge(step);
      if (parseErrors >= limits.maxParseErrors) {
        status = 'FAILED';
        detail = `${parseErrors} parse errors; the last: ${out.error}`;
      }
    } else {
      ops.checkCancelled();
      ops.onProgress?.({ turns: steps, phase: 'envStep' });
      const stepped = await retrying(() => ops.envStep(step));
      noteContainer(stepped.containerId);
      judge(step);
      if (stepped.done) {
        status = 'COMPLETED';
        detail = 'the environment ended the episode';
      }
    }
  }
  if (status === null) {
    status = 'TRUNCATED';
    detail = `stopped after ${limits.maxTurns} turns`;
  }
  let reward: number | null = null;
  if (status !== 'FAILED') {
    ops.checkCancelled();
    ops.onProgress?.({ turns: steps, phase: 'evaluate' });
    const evaluation = await retrying(() => ops.evaluate(steps, finalAnswer));
    noteContainer(evaluation.containerId);
    reward = evaluation.reward;
    detail = `${detail}; ${evaluation.detail}`;
  }
  let stepScores: number[] | null = null;
  if (ops.judge) {
    ops.onProgress?.({ turns: steps, phase: 'judge' });
    stepScores = [];
    for (let step = 0; step < steps; step++) stepScores.push(await (judged[step] ?? Promise.resolve(0)));
  }
  return { status, reward, steps, sampleIds, parseErrors, detail, stepScores, containerIds };
}
