// The project's reference engine (engine/): it serves the SGLang subset the project uses, in SGLang's
// spelling, so its adapter is SGLang's with what differs: it names the weight version on every answer,
// streams included; it always parses tool calls and reasoning; it has no LoRA adapters to load (its trainer
// exports whole model folders).

import type { EngineFeatures, EngineKind, LoraAdapterRequest } from './engine-adapter.js';
import { EngineFeatureError } from './engine-adapter.js';
import { SglangAdapter } from './sglang-adapter.js';

export class ReferenceAdapter extends SglangAdapter {
  override readonly kind: EngineKind = 'reference';
  override readonly features: EngineFeatures = {
    weightVersionInResponse: { stream: true, nonStream: true },
    loraAdapters: false,
    prefillTemperature: true,
    chatFromTokenIds: true,
  };

  override async servingProblems(): Promise<string[]> {
    return [];
  }

  override async loadLoraAdapter(_request: LoraAdapterRequest): Promise<void> {
    throw new EngineFeatureError(
      'the reference engine loads no LoRA adapters: publish the merged model folder (publishWeights)',
    );
  }
}
