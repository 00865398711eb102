// The project's reference engine (engine/): it serves the SGLang subset the project uses, in SGLang's
// spelling, so its adapter is SGLang's with what differs: it names the weight version on every answer,
// streams included (an adapter's own version on the answers that adapter served); it always parses tool calls
// and reasoning; a LoRA adapter loaded again under its name replaces it, with the version given; it scores a teacher prefill at the temperature asked for, unless it was
// started with `--return-original-logprob` (then every log-prob is at temperature 1, and it says so).

import type { EngineFeatures, EngineKind, LoraAdapterRequest } from './engine-adapter.js';
import { EngineFeatureError } from './engine-adapter.js';
import { SglangAdapter } from './sglang-adapter.js';

export class ReferenceAdapter extends SglangAdapter {
  override readonly kind: EngineKind = 'reference';
  override readonly features: EngineFeatures = {
    weightVersionInResponse: { stream: true, nonStream: true },
    loraAdapters: true,
    prefillTemperature: true,
    prefillImages: true,
    chatFromTokenIds: true,
  };

  override async servingProblems(): Promise<string[]> {
    return [];
  }

  /** Refuses when the engine reports every log-prob at temperature 1 (`/model_info` `logprob_semantics`). */
  protected override async checkPrefillTemperature(temperature: number, signal?: AbortSignal): Promise<void> {
    const info = await this.rawModelInfo(signal);
    if (info.logprob_semantics === 'original')
      throw new EngineFeatureError(
        `the reference engine at ${this.url} runs with --return-original-logprob, so it scores at temperature 1 ` +
          `only (asked for ${temperature}); start the teacher without it`,
      );
  }

  /** `/load_lora_adapter` with the adapter's weight version, which SGLang's route does not take. */
  override async loadLoraAdapter(request: LoraAdapterRequest, signal?: AbortSignal): Promise<void> {
    await this.loadAdapter(
      {
        lora_name: request.name,
        lora_path: request.path,
        ...(request.version !== undefined && { weight_version: request.version }),
      },
      signal,
    );
  }
}
