import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AssembleInput,
  agenticStepKey,
  batchResultsKey,
  createAgenticActivities,
  type StepManifest,
} from '../../activities/agentic-activities.js';
import { type RolloutStepRecord, rolloutKeys } from '../../activities/rollout-records.js';
import { normaliseGroupRewards, normaliseStepWise } from '../../core/advantages.js';
import { sampleKey } from '../../core/turn-record.js';
import type { TrainingSample } from '../../core/types.js';
import { createEnvironmentRegistry } from '../../environments/registry.js';
import { FileSampleStore } from '../../store/sample-store.js';
import type { SlotResult } from '../../workflows/agentic-signals.js';

describe('assembleStepSamples', () => {
  let dir: string;
  let store: FileSampleStore;
  let activities: ReturnType<typeof createAgenticActivities>;

  const record = (rolloutId: string, step: number, responseIds = [7, 8, 9]): RolloutStepRecord => ({
    rolloutId,
    step,
    sampleId: `${rolloutId}:${step}`,
    promptIds: [1, 2, 3, 4],
    responseIds,
    responseLogProbs: responseIds.map(() => -0.5),
    policyVersion: 2,
    finishReason: 'stop',
    message: { role: 'assistant', content: 'x' },
    action: { kind: 'final', text: 'x' },
    errorMessages: [],
    truncation: null,
    recordedAt: '2026-01-01T00:00:00Z',
  });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'assemble-'));
    store = new FileSampleStore(dir);
    activities = createAgenticActivities({ store, registry: createEnvironmentRegistry() });
    for (const id of ['a0', 'a1', 'b0', 'b1', 'c0', 'c1']) {
      await store.put(rolloutKeys.step(id, 0), record(id, 0));
      await store.put(rolloutKeys.step(id, 1), record(id, 1, id === 'a1' ? [] : [5, 6]));
    }
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const rollout = (rolloutId: string, reward: number | null, stepScores: number[] | null = null) => ({
    rolloutId,
    status: reward === null ? 'FAILED' : 'COMPLETED',
    reward,
    steps: 2,
    stepScores,
  });

  it('grpo: group-normalised outcome broadcast to every step sample; constant groups dropped', async () => {
    const input: AssembleInput = {
      runId: 'r',
      stepId: 'r:step0',
      step: 0,
      advantage: 'grpo',
      judgeCoef: null,
      groups: [
        { groupId: '0:a', taskId: 'a', complete: true, rollouts: [rollout('a0', 1), rollout('a1', 0)] },
        { groupId: '1:b', taskId: 'b', complete: true, rollouts: [rollout('b0', 1), rollout('b1', 1)] },
        { groupId: '2:c', taskId: 'c', complete: false, rollouts: [rollout('c0', 1), rollout('c1', null)] },
      ],
    };
    const result = await activities.assembleStepSamples(input);
    // a1's step 1 sampled nothing: no sample for it. c1 failed and is left out; c0 alone is a constant group.
    expect(result).toEqual({
      sampleIds: ['a0:0', 'a0:1', 'a1:0'],
      sampleCount: 3,
      manifestKey: agenticStepKey('r', 0),
      groupsKept: 1,
      groupsConstant: 2,
      groupsFailed: 0,
      rolloutsDropped: 1,
      meanReward: 0.8,
    });
    const [plus, minus] = normaliseGroupRewards([1, 0]);
    const sample = await store.get<TrainingSample>(sampleKey('a0:1'));
    expect(sample).toMatchObject({
      reward: plus,
      tokens: [1, 2, 3, 4, 5, 6],
      responseLength: 2,
      policyVersion: 2,
      method: 'rl',
    });
    expect(sample?.lossMask).toEqual([1, 1]);
    expect((await store.get<TrainingSample>(sampleKey('a1:0')))?.reward).toBe(minus);
    const manifest = await store.get<StepManifest>(agenticStepKey('r', 0));
    expect(manifest?.constantGroupIds).toEqual(['1:b', '2:c']);
    expect(manifest?.droppedRolloutIds).toEqual(['c1']);
    expect(manifest?.advantages['a1:0']).toBe(minus);
  });

  it('grpo drops only the failed rollout: the rest of its group is normalised among itself', async () => {
    const result = await activities.assembleStepSamples({
      runId: 'r',
      stepId: 'r:step3',
      step: 3,
      advantage: 'grpo',
      judgeCoef: null,
      groups: [
        {
          groupId: '0:a',
          taskId: 'a',
          complete: false,
          rollouts: [rollout('b0', 1), rollout('c1', null), rollout('b1', 0), rollout('c0', 0)],
        },
        {
          groupId: '1:b',
          taskId: 'b',
          complete: false,
          rollouts: [rollout('a0', null), rollout('a1', null)],
        },
      ],
    });
    const [b0, b1, c0] = normaliseGroupRewards([1, 0, 0]);
    expect(result).toMatchObject({ groupsKept: 1, groupsConstant: 0, groupsFailed: 1, rolloutsDropped: 3 });
    expect(result.sampleIds).toEqual(['b0:0', 'b0:1', 'b1:0', 'b1:1', 'c0:0', 'c0:1']);
    expect((await store.get<TrainingSample>(sampleKey('b0:0')))?.reward).toBe(b0);
    expect((await store.get<TrainingSample>(sampleKey('b1:1')))?.reward).toBe(b1);
    expect((await store.get<TrainingSample>(sampleKey('c0:0')))?.reward).toBe(c0);
  });

  it('reads the step from its batches’ records and keeps the sample ids in the manifest only', async () => {
    const slot = (group: number, sample: number, rolloutId: string, reward: number | null): SlotResult => ({
      group,
      sample,
      taskId: `t${group}`,
      rolloutId,
      attempts: 1,
      status: reward === null ? 'FAILED' : 'COMPLETED',
      reward,
      steps: 2,
      stepScores: null,
      containerIds: [],
    });
    await activities.recordBatchResults({
      key: batchResultsKey('rb', 0, 0),
      record: { batchIndex: 0, results: [slot(0, 1, 'a1', 0), slot(0, 0, 'a0', 1)] },
    });
    await activities.recordBatchResults({
      key: batchResultsKey('rb', 0, 1),
      record: { batchIndex: 1, results: [slot(1, 0, 'b0', 1), slot(1, 1, 'b1', null)] },
    });
    const result = await activities.assembleStepSamples({
      runId: 'rb',
      stepId: 'rb:step0',
      step: 0,
      advantage: 'grpo',
      judgeCoef: null,
      batches: 2,
    });
    expect(result).toEqual({
      sampleCount: 3,
      manifestKey: agenticStepKey('rb', 0),
      groupsKept: 1,
      groupsConstant: 1,
      groupsFailed: 0,
      rolloutsDropped: 1,
      meanReward: 2 / 3,
    });
    const manifest = await store.get<StepManifest>(agenticStepKey('rb', 0));
    expect(manifest?.sampleIds).toEqual(['a0:0', 'a0:1', 'a1:0']);
    expect(manifest?.groups.map((g) => g.rollouts.map((r) => r.rolloutId))).toEqual([
      ['a0', 'a1'],
      ['b0', 'b1'],
    ]);
    await expect(
      activities.assembleStepSamples({
        runId: 'rb',
        stepId: 'rb:step1',
        step: 1,
        advantage: 'grpo',
        judgeCoef: null,
        batches: 1,
      }),
    ).rejects.toThrow(/left no results/);
  });

  it('keeps the temperature a step was sampled at on its sample, so the trainer computes log-probs at it', async () => {
    for (const id of ['t0', 't1'])
      await store.put(rolloutKeys.step(id, 0), { ...record(id, 0), temperature: 0.6 });
    await activities.assembleStepSamples({
      runId: 'warm',
      stepId: 'warm:step0',
      step: 0,
      advantage: 'grpo',
      judgeCoef: null,
      groups: [
        {
          groupId: '0:t',
          taskId: 't',
          complete: true,
          rollouts: [
            { ...rollout('t0', 1), steps: 1 },
            { ...rollout('t1', 0), steps: 1 },
          ],
        },
      ],
    });
    expect((await store.get<TrainingSample>(sampleKey('t0:0')))?.temperature).toBe(0.6);
    // Records from before temperatures were kept (and T = 1) leave the sample at its default, 1.
    expect((await store.get<TrainingSample>(sampleKey('a0:0')))?.temperature).toBeUndefined();
  });

  it('grpo adds the step judge: outcome + coef × mean step score', async () => {
    const result = await activities.assembleStepSamples({
      runId: 'r',
      stepId: 'r:step1',
      step: 1,
      advantage: 'grpo',
      judgeCoef: 0.5,
      groups: [
        {
          groupId: '1:b',
          taskId: 'b',
          complete: true,
          rollouts: [rollout('b0', 1, [1, 1]), rollout('b1', 1, [-1, 1])],
        },
      ],
    });
    const [plus] = normaliseGroupRewards([1.5, 1]);
    expect(result.groupsConstant).toBe(0);
    expect((await store.get<TrainingSample>(sampleKey('b0:0')))?.reward).toBeCloseTo(plus ?? Number.NaN, 12);
  });

  it('step_wise: each step normalised within its (group, step index) bucket', async () => {
    const result = await activities.assembleStepSamples({
      runId: 'r',
      stepId: 'r:step2',
      step: 2,
      advantage: 'step_wise',
      judgeCoef: 1,
      groups: [
        {
          groupId: '1:b',
          taskId: 'b',
          complete: true,
          rollouts: [rollout('b0', 1, [1, 1]), rollout('b1', 0, [-1, 1])],
        },
      ],
    });
    const expected = normaliseStepWise([
      {
        groupId: '1:b',
        steps: [
          { stepIndex: 0, value: 2, tokenSpan: [0, 0] },
          { stepIndex: 1, value: 2, tokenSpan: [0, 0] },
        ],
      },
      {
        groupId: '1:b',
        steps: [
          { stepIndex: 0, value: -1, tokenSpan: [0, 0] },
          { stepIndex: 1, value: 1, tokenSpan: [0, 0] },
        ],
      },
    ]);
    expect(result.sampleIds).toEqual(['b0:0', 'b0:1', 'b1:0', 'b1:1']);
    expect((await store.get<TrainingSample>(sampleKey('b1:0')))?.reward).toBe(
      expected.samples[1]?.steps[0]?.value,
    );
    expect((await store.get<TrainingSample>(sampleKey('b0:1')))?.reward).toBe(
      expected.samples[0]?.steps[1]?.value,
    );
  });

  it('lists an environment’s tasks', async () => {
    expect(await activities.listEnvTasks({ env: 'arith', limit: 3 })).toEqual([
      'arith-0',
      'arith-1',
      'arith-2',
    ]);
    await expect(activities.listEnvTasks({ env: 'nope' })).rejects.toThrow(/unknown environment/);
  });
});
