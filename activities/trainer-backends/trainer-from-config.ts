/**
 * The trainer backend the configuration names (`OPENCLAW_TRAINER`): the reference engine over HTTP, slime in
 * one container per step, or Tinker or Fireworks through their sidecars. Workers build their trainer here, so every process
 * that trains reads the same options (docs/configuration.md).
 */

import { join, resolve } from 'node:path';
import type { OpenClawConfig } from '../../core/config.js';
import { adapterName } from '../../core/tenant-adapters.js';
import { engineAuthHeaders } from '../../security/engine-token.js';
import type { TrainerBackend } from '../trainer-backend.js';
import { FireworksTrainerBackend } from './fireworks-trainer.js';
import { ReferenceTrainerBackend } from './reference-trainer.js';
import { SPEC_LORA } from './slime-arguments.js';
import { referenceEpochCommand, slimeEpochCommand } from './slime-epoch-command.js';
import { SlimeTrainerBackend, type SlimeTrainerOptions } from './slime-trainer.js';
import { TinkerTrainerBackend } from './tinker-trainer.js';

/** What only a process can give a slime backend (a Docker client, where logs go, extra mounts). */
export type TrainerFromConfigOptions = Pick<SlimeTrainerOptions, 'docker' | 'onLog' | 'binds'>;

/** The slime backend's options from the config (exported so the choice can be checked without Docker). */
export function slimeOptionsFromConfig(config: OpenClawConfig): SlimeTrainerOptions {
  const { trainer } = config;
  const rank = config.engine.loraRank;
  // spec 8.1 pairs rank 16 with alpha 32: keep that ratio for other ranks.
  const lora = rank > 0 ? { ...SPEC_LORA, rank, alpha: 2 * rank } : undefined;
  const actorGpus = Math.max(1, trainer.gpuIds.length || trainer.gpus);
  return {
    image: trainer.image,
    sharedDir: resolve(trainer.sharedDir || join(config.dataDir, 'trainer')),
    baseModel: resolve(trainer.baseModel || config.engine.model),
    gpus: trainer.gpus,
    gpuIds: trainer.gpuIds,
    shmBytes: trainer.shmBytes > 0 ? trainer.shmBytes : undefined,
    extraArgs: trainer.extraArgs.split(/\s+/).filter(Boolean),
    command:
      trainer.epochCommand === 'reference'
        ? referenceEpochCommand(lora ? { lora: { rank: lora.rank, alpha: lora.alpha } } : {})
        : slimeEpochCommand({ actorGpus, ...(lora && { lora }) }),
  };
}

/**
 * Where the reference trainer answers: `trainer.url`; else the policy engine when it is the reference engine
 * (it trains too), or the port after the policy engine's (where `dev` and `engine` start the trainer beside
 * vLLM or SGLang).
 */
export function referenceTrainerUrl(config: OpenClawConfig): string {
  if (config.trainer.url) return config.trainer.url;
  if (config.engine.kind === 'reference') return config.engine.url;
  const url = new URL(config.engine.url);
  url.port = String(Number(url.port || (url.protocol === 'https:' ? 443 : 80)) + 1);
  return url.toString().replace(/\/+$/, '');
}

export function trainerFromConfig(
  config: OpenClawConfig,
  options: TrainerFromConfigOptions = {},
): TrainerBackend {
  switch (config.trainer.backend) {
    case 'reference':
      return new ReferenceTrainerBackend(referenceTrainerUrl(config), engineAuthHeaders(config));
    case 'slime':
      return new SlimeTrainerBackend({ ...slimeOptionsFromConfig(config), ...options });
    case 'tinker':
      return new TinkerTrainerBackend(
        config.trainer.tinkerUrl || config.engine.url,
        engineAuthHeaders(config),
      );
    case 'fireworks':
      return new FireworksTrainerBackend(
        config.trainer.fireworksUrl || config.engine.url,
        engineAuthHeaders(config),
      );
  }
}

/**
 * The trainer of run `runId`: a tenant's adapter run (core/tenant-adapters.ts) trains its adapter on the
 * reference trainer's `/adapters/<tenant>` routes, which speak the same contract; any other run trains `shared`.
 */
export function trainerForRun(
  config: OpenClawConfig,
  shared: TrainerBackend,
): (runId: string) => TrainerBackend {
  const adapters = new Map<string, TrainerBackend>();
  return (runId) => {
    const name = adapterName(runId);
    if (name === null) return shared;
    let trainer = adapters.get(name);
    if (trainer === undefined) {
      trainer = new ReferenceTrainerBackend(
        `${referenceTrainerUrl(config)}/adapters/${encodeURIComponent(name)}`,
        engineAuthHeaders(config),
      );
      adapters.set(name, trainer);
    }
    return trainer;
  };
}
