/** Policy engine kinds, one adapter each (engines/): the project's reference engine, SGLang, vLLM. */
export const ENGINE_KINDS = ['reference', 'sglang', 'vllm'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];
