import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { batchTemperature } from '../../activities/trainer-backends/slime-trainer.js';
import { asTrainerRefusal, refusedSamplesNamed } from '../../activities/trainer-refusal.js';
import { TRAINER_REFUSED } from '../../activities/training-errors.js';
import { formatTrainingStatus } from '../../cli/train-status.js';
import { trainingSettingsSchema } from '../../core/training-settings.js';
import { EngineHttpError } from '../../engines/engine-http.js';

const sample = (temperature?: number) => ({
  tokens: [1, 2, 3],
  responseLength: 1,
  lossMask: [1],
  rolloutLogProbs: [-1],
  reward: 1,
  ...(temperature !== undefined && { temperature }),
});

describe('trainer refusals', () => {
  it('makes a 4xx answer a non-retryable refusal and leaves the rest to retries', () => {
    for (const status of [400, 404, 409, 422]) {
      const refusal = asTrainerRefusal(new EngineHttpError('client_error', `HTTP ${status}`, status));
      expect(refusal).toBeInstanceOf(ApplicationFailure);
      expect(refusal).toMatchObject({ type: TRAINER_REFUSED, nonRetryable: true });
    }
    for (const [kind, status] of [
      ['client_error', 408],
      ['client_error', 429],
      ['server_error', 500],
      ['unavailable', 503],
      ['unreachable', null],
    ] as const) {
      const error = new EngineHttpError(kind, 'try again', status);
      expect(asTrainerRefusal(error)).toBe(error);
    }
  });

  it('names the samples a refusal points at by position, from the engine or a backend', () => {
    const ids = ['a:1', 'b:1', 'c:1'];
    const body = JSON.stringify({ error: { message: 'x', param: 'samples[2].tokens' } });
    const http = new EngineHttpError(
      'client_error',
      'HTTP 400: samples[2].tokens: token id 9 is outside',
      400,
      body,
    );
    expect(asTrainerRefusal(http, ids)).toMatchObject({ details: [{ refusedSampleIds: ['c:1'] }] });
    // A schema error's location (`"samples", 1`), and a backend's own refusal.
    const schema = new EngineHttpError(
      'client_error',
      'HTTP 422',
      422,
      '{"loc":["body","samples",1,"reward"]}',
    );
    expect(asTrainerRefusal(schema, ids)).toMatchObject({ details: [{ refusedSampleIds: ['b:1'] }] });
    const own = ApplicationFailure.nonRetryable('samples[0] has no teacher', TRAINER_REFUSED);
    expect(asTrainerRefusal(own, ids)).toMatchObject({ details: [{ refusedSampleIds: ['a:1'] }] });
    // A refusal of the whole batch names none; a position beyond the batch is ignored.
    const norm = new EngineHttpError('client_error', 'HTTP 422: non-finite gradient norm (nan)', 422);
    expect(asTrainerRefusal(norm, ids)).toMatchObject({ details: [] });
    expect(refusedSamplesNamed('samples[7].tokens', ids)).toEqual([]);
  });

  it('slime trains one temperature per step and refuses a batch that mixes them', () => {
    expect(batchTemperature([sample(), sample(1)])).toBe(1);
    expect(batchTemperature([sample(0.6), sample(0.6)])).toBe(0.6);
    expect(() => batchTemperature([sample(0.6), sample()])).toThrow(/mixes temperatures 0.6, 1/);
  });

  it('train status shows the last refusal, the backlog and the incarnation', () => {
    const text = formatTrainingStatus({
      runId: 'r',
      method: 'rl',
      policyVersion: 2,
      stepsCompleted: 2,
      pendingSamples: 1500,
      samplesTrained: 32,
      samplesExcluded: 16,
      paused: false,
      lastStepId: 'r:i1:v2',
      exclusionsByReason: { 'trainer-refused': 16 },
      lastMetrics: null,
      lastCheckpoint: '/data/checkpoints/r/i1/v2',
      settings: trainingSettingsSchema.parse({}),
      incarnation: 'i1',
      backlogSamples: 500,
      lastRefusal: { stepId: 'r:i1:v3', samples: 16, detail: 'HTTP 422: non-finite gradient norm' },
    });
    expect(text).toContain('samples waiting  1500 of a batch of 16 (500 of them in the store)');
    expect(text).toContain('trainer-refused 16');
    expect(text).toContain(
      'last refusal     r:i1:v3: 16 samples excluded: HTTP 422: non-finite gradient norm',
    );
    expect(text).toContain('incarnation      i1');
  });
});
