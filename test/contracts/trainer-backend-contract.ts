// The contract every TrainerBackend passes (activities/trainer-backend.ts), whatever trains: the reference
// engine, slime's epoch containers, the Tinker sidecar. What the training workflow relies on: a trainer starts
// from its base; a step id trains once (a repeat returns the recorded metrics); a saved checkpoint brings a
// trainer reset to its base back to the steps it holds; an export is something the serving side loads.
// Each implementation's test file runs it: test/activities/{reference,slime,tinker}-trainer.test.ts.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultLossConfig,
  defaultOptimizerConfig,
  type LossConfig,
  type TrainerBackend,
  type TrainerSample,
} from '../../activities/trainer-backend.js';

export interface TrainerContractSubject {
  /** A trainer at its base: nothing trained. */
  trainer: TrainerBackend;
  /** A folder the trainer may write checkpoints and exports in (empty). */
  dir: string;
  /** Asserts that the serving side of this kind can load what `exportForServing` returned. */
  expectServable(path: string): Promise<void>;
  close(): Promise<void>;
}

/** Three trained tokens after a three-token prompt; ids every tiny model's vocabulary holds. */
const SAMPLE: TrainerSample = {
  tokens: [11, 12, 13, 21, 22, 23],
  responseLength: 3,
  lossMask: [1, 1, 1],
  rolloutLogProbs: [-1, -2, -0.5],
  reward: 1,
};
const LOSS: LossConfig = { ...defaultLossConfig, method: 'grpo' };
const OPTIMIZER = { ...defaultOptimizerConfig, lr: 1e-3 };

export function describeTrainerBackendContract(
  name: string,
  start: () => Promise<TrainerContractSubject>,
  timeoutMs = 120_000,
): void {
  describe(`trainer backend contract: ${name}`, () => {
    let subject: TrainerContractSubject;
    let trainer: TrainerBackend;

    beforeAll(async () => {
      subject = await start();
      trainer = subject.trainer;
    }, 300_000);

    afterAll(async () => {
      await subject?.close();
    });

    it('starts from its base: nothing trained, no step applied', async () => {
      expect(await trainer.hasTrained()).toBe(false);
      expect(await trainer.hasApplied('contract:1')).toBe(false);
    });

    it(
      'trains a step id once: a repeat returns the recorded metrics and trains nothing',
      async () => {
        const first = await trainer.trainStep('contract:1', [SAMPLE], LOSS, OPTIMIZER);
        expect(first.duplicate ?? false).toBe(false);
        expect(first.tokens).toBe(3);
        expect(Number.isFinite(first.loss)).toBe(true);
        expect(await trainer.hasApplied('contract:1')).toBe(true);
        expect(await trainer.hasApplied('contract:2')).toBe(false);
        expect(await trainer.hasTrained()).toBe(true);

        const again = await trainer.trainStep('contract:1', [SAMPLE], LOSS, OPTIMIZER);
        expect(again.duplicate).toBe(true);
        expect(again.loss).toBe(first.loss);

        const second = await trainer.trainStep('contract:2', [{ ...SAMPLE, reward: -1 }], LOSS, OPTIMIZER);
        expect(second.duplicate ?? false).toBe(false);
        expect(await trainer.hasApplied('contract:1')).toBe(true);
        expect(await trainer.hasApplied('contract:2')).toBe(true);
      },
      timeoutMs,
    );

    it(
      'a saved checkpoint brings a trainer reset to its base back to the steps it holds',
      async () => {
        const checkpoint = join(subject.dir, 'checkpoints', 'contract');
        await trainer.saveCheckpoint(checkpoint);
        await trainer.resetToBase();
        expect(await trainer.hasTrained()).toBe(false);
        expect(await trainer.hasApplied('contract:1')).toBe(false);

        await trainer.loadCheckpoint(checkpoint);
        expect(await trainer.hasTrained()).toBe(true);
        expect(await trainer.hasApplied('contract:1')).toBe(true);
        expect(await trainer.hasApplied('contract:2')).toBe(true);
        expect((await trainer.trainStep('contract:1', [SAMPLE], LOSS, OPTIMIZER)).duplicate).toBe(true);
      },
      timeoutMs,
    );

    it(
      'exports a path the serving side loads',
      async () => {
        const exported = await trainer.exportForServing(join(subject.dir, 'exports', 'contract'));
        expect(existsSync(exported)).toBe(true);
        await subject.expectServable(exported);
      },
      timeoutMs,
    );
  });
}
