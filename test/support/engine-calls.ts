// Raw calls to a real reference engine (or the Tinker sidecar, which serves the same routes), for tests
// that look at what the engine itself answers: its model info, a native /generate, its trainer state.
// Production code talks to engines through their adapters (engines/); this reads them from outside.

import { EngineHttp } from '../../engines/engine-http.js';

export interface EngineGenerateOutput {
  text: string;
  output_ids: number[];
  meta_info: {
    weight_version?: string | number;
    output_token_logprobs?: [number | null, number, string | null][];
    input_token_logprobs?: [number | null, number, string | null][];
    [field: string]: unknown;
  };
}

export interface EngineModelInfo {
  weight_version: string | number;
  model_path?: string;
  [field: string]: unknown;
}

export function engineCalls(url: string) {
  const http = new EngineHttp(url, { timeoutMs: 120_000 });
  return {
    url: http.baseUrl,
    request: (method: 'GET' | 'POST', path: string, body?: unknown) => http.json(method, path, body),
    generate: async (body: unknown) => (await http.json('POST', '/generate', body)) as EngineGenerateOutput,
    modelInfo: async () => (await http.json('GET', '/model_info')) as EngineModelInfo,
    health: () => http.answers('/health', 5_000),
    updateWeightsFromDisk: async (modelPath: string, weightVersion: string) =>
      (await http.json('POST', '/update_weights_from_disk', {
        model_path: modelPath,
        weight_version: weightVersion,
      })) as { success: boolean; message: string },
  };
}

export type EngineCalls = ReturnType<typeof engineCalls>;
