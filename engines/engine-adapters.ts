// The adapter registry: one implementation per engine kind, chosen by the configuration (`engine.kind`,
// `teacher.kind`), so every process that talks to an engine reads the same options.

import type { OpenClawConfig } from '../core/config.js';
import type { EngineAdapter, EngineKind } from './engine-adapter.js';
import type { EngineHttpOptions } from './engine-http.js';
import { ReferenceAdapter } from './reference-adapter.js';
import { SglangAdapter } from './sglang-adapter.js';
import { VllmAdapter } from './vllm-adapter.js';

export function createEngineAdapter(
  kind: EngineKind,
  url: string,
  options: EngineHttpOptions = {},
): EngineAdapter {
  switch (kind) {
    case 'reference':
      return new ReferenceAdapter(url, options);
    case 'sglang':
      return new SglangAdapter(url, options);
    case 'vllm':
      return new VllmAdapter(url, options);
  }
}

/** The policy engine at `engine.url`. */
export function policyEngineFromConfig(
  config: OpenClawConfig,
  options: EngineHttpOptions = {},
): EngineAdapter {
  return createEngineAdapter(config.engine.kind, config.engine.url, options);
}

/** The teacher at `teacher.url`: of `teacher.kind`, else of the policy engine's kind. */
export function teacherEngineFromConfig(
  config: OpenClawConfig,
  options: EngineHttpOptions = {},
): EngineAdapter {
  return createEngineAdapter(config.teacher.kind || config.engine.kind, config.teacher.url, options);
}
