// The episode loop on its own, with operations that record what was asked: the agent time limit ends the
// episode as TRUNCATED and it is still evaluated; retryable failures are tried again inside the attempt and
// non-retryable ones are not.
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { type EpisodeOperations, runEpisodeLoop, withRetries } from '../../activities/episode-loop.js';
import type { PolicyStepResult } from '../../activities/policy-step.js';

const toolStep = (step: number): PolicyStepResult => ({
  sampleId: `r:${step}`,
  kind: 'tools',
  calls: 1,
  finalAnswer: null,
  error: null,
  finishReason: 'tool_calls',
  policyVersion: 0,
  promptTokens: 10,
  responseTokens: 5,
  truncated: false,
});

function operations(deadline: () => number | null, asked: string[]): EpisodeOperations {
  return {
    policyStep: async (step) => {
      asked.push(`policy ${step}`);
      return toolStep(step);
    },
    envStep: async (step) => {
      asked.push(`env ${step}`);
      return { containerId: 'c1', done: false };
    },
    evaluate: async (steps) => {
      asked.push(`evaluate ${steps}`);
      return { containerId: 'c1', reward: 0.5, detail: 'half the tests' };
    },
    deadline: async () => deadline(),
    checkCancelled: () => undefined,
  };
}

describe('runEpisodeLoop', () => {
  it('stops asking the policy once the agent time limit ended, and evaluates the episode as TRUNCATED', async () => {
    const asked: string[] = [];
    const deadline = Date.now() + 2_000;
    const ops = operations(() => deadline, asked);
    const envStep = ops.envStep;
    ops.envStep = async (step) => {
      // The limit ends during the second step.
      if (step === 1) while (Date.now() <= deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      return envStep(step);
    };
    const outcome = await runEpisodeLoop({ maxTurns: 10, maxParseErrors: 3 }, ops);
    expect(asked).toEqual(['policy 0', 'env 0', 'policy 1', 'env 1', 'evaluate 2']);
    expect(outcome).toMatchObject({ status: 'TRUNCATED', reward: 0.5, steps: 2, containerIds: ['c1'] });
    expect(outcome.detail).toBe('the agent time limit ended after 2 turns; half the tests');
  });

  it('reports the turns done and the phase before each operation (the heartbeat the progress bar reads)', async () => {
    const asked: string[] = [];
    const reported: string[] = [];
    const ops = operations(() => null, asked);
    ops.onProgress = ({ turns, phase }) => reported.push(`${phase} ${turns}`);
    await runEpisodeLoop({ maxTurns: 2, maxParseErrors: 3 }, ops);
    expect(reported).toEqual(['policyStep 0', 'envStep 1', 'policyStep 1', 'envStep 2', 'evaluate 2']);
  });

  it('without a limit runs to maxTurns', async () => {
    const asked: string[] = [];
    const outcome = await runEpisodeLoop(
      { maxTurns: 3, maxParseErrors: 3 },
      operations(() => null, asked),
    );
    expect(outcome).toMatchObject({
      status: 'TRUNCATED',
      steps: 3,
      detail: 'stopped after 3 turns; half the tests',
    });
  });

  it('tries a failed operation again inside the attempt, but not a non-retryable failure', async () => {
    let calls = 0;
    const flaky = () => {
      calls++;
      return calls < 2 ? Promise.reject(new Error('engine restarting')) : Promise.resolve('ok');
    };
    expect(await withRetries(flaky, () => undefined)).toBe('ok');
    expect(calls).toBe(2);
    let refused = 0;
    await expect(
      withRetries(
        () => {
          refused++;
          return Promise.reject(ApplicationFailure.nonRetryable('bad request', 'PolicyRejected'));
        },
        () => undefined,
      ),
    ).rejects.toThrow('bad request');
    expect(refused).toBe(1);
  });
});
