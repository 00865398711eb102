// vLLM's server command line as the project starts it (`dev --engine vllm`, `worker gpu --engine-kind vllm`,
// compose's vllm profile), and the environment it needs. Pure; the conformance suite parses these arguments
// with vLLM's own argument parser (vllm.entrypoints.openai.cli_args.make_arg_parser).
//
// Why each flag (docs/engines.md):
// - `--logprobs-mode processed_logprobs`: report log p(token) after temperature and top-k/top-p, i.e. of the
//   distribution the token was sampled from (vLLM's default, raw_logprobs, is before temperature);
// - `--generation-config vllm`: sampling defaults are vLLM's (temperature 1), not the model folder's
//   generation_config.json, so a request means the same on every engine;
// - `--enable-auto-tool-choice --tool-call-parser hermes`: Qwen3's `<tool_call>{...}</tool_call>` format;
//   `--reasoning-parser qwen3`: `<think>...</think>` as reasoning;
// - CPU: `--dtype float32 --enforce-eager` and a KV cache of a fixed size (the CPU build otherwise reserves
//   `--gpu-memory-utilization` of the whole machine's memory); `--no-enable-chunked-prefill`, because the CPU
//   build's engine dies when a seeded request's prefill is split (v1/worker/gpu_model_runner.py
//   `_bookkeeping_sync` rewinds the request's generator with `set_offset`: "CPU Generator does not use
//   offset"), which 64 concurrent seeded requests did here.

export const VLLM_SERVER_MODULE = 'vllm.entrypoints.openai.api_server';

/** The control routes (/pause, /resume, /collective_rpc, /update_weight_version, /weight_info) and LoRA loads. */
export const VLLM_SERVER_ENV: Readonly<Record<string, string>> = {
  VLLM_SERVER_DEV_MODE: '1',
  VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True',
};

/**
 * vLLM's API key, as its own variable: the server takes `--api-key` or else VLLM_API_KEY
 * (entrypoints/serve/middleware/register.py), and a variable stays out of the process list. It guards only the
 * /v1, /v2, /inference and /cohere routes (middleware/authenticate.py `GUARDED_PREFIX`).
 */
export function vllmApiKeyEnv(token: string | null | undefined): Record<string, string> {
  return token ? { VLLM_API_KEY: token } : {};
}

export interface VllmServerSettings {
  model: string;
  /** The name requests must use in `model` (vLLM refuses others). */
  servedModelName: string;
  host: string;
  port: number;
  device: 'cpu' | 'cuda';
  tensorParallel?: number;
  /** The KV cache on CPU, in bytes (default 1 GiB). */
  cpuKvCacheBytes?: number;
  maxModelLen?: number;
  /** LoRA adapters loaded at run time (tenants' policies): the largest rank and how many at once. */
  lora?: { maxRank: number; maxLoras: number };
  /** Appended last: vLLM's argument parser keeps the last value of a repeated flag. */
  extraArgs?: readonly string[];
}

export const DEFAULT_CPU_KV_CACHE_BYTES = 2 ** 30;

/** The arguments after `python -m vllm.entrypoints.openai.api_server`. */
export function vllmServerArgs(settings: VllmServerSettings): string[] {
  const args = [
    '--model',
    settings.model,
    '--served-model-name',
    settings.servedModelName,
    '--host',
    settings.host,
    '--port',
    String(settings.port),
    '--logprobs-mode',
    'processed_logprobs',
    '--generation-config',
    'vllm',
    '--enable-auto-tool-choice',
    '--tool-call-parser',
    'hermes',
    '--reasoning-parser',
    'qwen3',
  ];
  if (settings.tensorParallel && settings.tensorParallel > 1)
    args.push('--tensor-parallel-size', String(settings.tensorParallel));
  if (settings.maxModelLen) args.push('--max-model-len', String(settings.maxModelLen));
  if (settings.lora)
    args.push(
      '--enable-lora',
      '--max-lora-rank',
      String(settings.lora.maxRank),
      '--max-loras',
      String(settings.lora.maxLoras),
      '--max-cpu-loras',
      String(settings.lora.maxLoras),
    );
  if (settings.device === 'cpu')
    args.push(
      '--dtype',
      'float32',
      '--enforce-eager',
      '--kv-cache-memory-bytes',
      String(settings.cpuKvCacheBytes ?? DEFAULT_CPU_KV_CACHE_BYTES),
      '--no-enable-chunked-prefill',
    );
  return [...args, ...(settings.extraArgs ?? [])];
}

/** Extra arguments as the configuration gives them (one string, split on whitespace). */
export function splitArgs(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}
