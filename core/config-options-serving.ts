// The run, the gateway, sampling defaults, the policy engine and Temporal: the first rows of the option table
// (core/config-options.ts), in the order docs/configuration.md lists them.

import type { ConfigOption } from './config-option.js';

export const SERVING_OPTIONS = [
  {
    key: 'runId',
    env: 'OPENCLAW_RUN_ID',
    kind: 'string',
    description: 'Training run name; the training workflow id is `training-<runId>`.',
  },
  {
    key: 'method',
    env: 'OPENCLAW_METHOD',
    kind: 'enum',
    description:
      'Learning method: `rl` (binary judge reward), `opd` (hindsight-hint distillation) or `combine` (both, one sample per turn).',
  },
  {
    key: 'dataDir',
    env: 'OPENCLAW_DATA_DIR',
    kind: 'string',
    description: 'Directory of the filesystem sample store, checkpoints and exported weights.',
  },
  {
    key: 'gateway.host',
    env: 'OPENCLAW_GATEWAY_HOST',
    kind: 'string',
    description: 'Address the gateway listens on; `0.0.0.0` to accept other machines.',
  },
  {
    key: 'gateway.port',
    env: 'OPENCLAW_GATEWAY_PORT',
    kind: 'integer',
    description: 'Port of the OpenAI-compatible gateway.',
  },
  {
    key: 'gateway.apiKeys',
    env: 'OPENCLAW_API_KEYS',
    kind: 'string-list',
    description:
      'Comma-separated bearer keys clients must send (original: `SGLANG_API_KEY`); each is a tenant of its own (`key-<digest>`; name tenants in the keys file). With none here and no keys file, the gateway is open (one tenant, `local`), which it only allows on a loopback address (docs/security.md).',
  },
  {
    key: 'gateway.apiKeysFile',
    env: 'OPENCLAW_API_KEYS_FILE',
    kind: 'string',
    defaultNote: '`<dataDir>/keys/api-keys`, when it exists',
    description:
      'File of more bearer keys, one per line: `<key> [<tenant>]` (a key without a tenant is a tenant of its own; several keys may share one; `#` starts a comment). Session ids are scoped by the tenant. `openclaw-rl keys init` creates it with a new key, and compose does on first start; `keys add --tenant NAME` adds one (docs/security.md#tenants).',
  },
  {
    key: 'gateway.allowNoKeys',
    env: 'OPENCLAW_GATEWAY_ALLOW_NO_KEYS',
    kind: 'boolean',
    description:
      'Let the gateway listen on a non-loopback address without any key (`--allow-no-keys`); otherwise it refuses to start.',
  },
  {
    key: 'gateway.rateLimitPerMinute',
    env: 'OPENCLAW_GATEWAY_RATE_LIMIT',
    kind: 'integer',
    description:
      'Requests per minute each API key (each client address on an open gateway) may make; more get 429 with `retry-after`. 0 turns the limit off.',
  },
  {
    key: 'gateway.bodyLimitBytes',
    env: 'OPENCLAW_GATEWAY_BODY_LIMIT_BYTES',
    kind: 'integer',
    description: 'Largest request body the gateway reads; larger ones get 413.',
  },
  {
    key: 'gateway.idempotencyTtlMs',
    env: 'OPENCLAW_IDEMPOTENCY_TTL_MS',
    kind: 'integer',
    description:
      'How long a response sent under an `Idempotency-Key` is kept for replay (per API key); after it the key may be reused.',
  },
  {
    key: 'gateway.responsesRetentionDays',
    env: 'OPENCLAW_RESPONSES_RETENTION_DAYS',
    kind: 'number',
    description:
      'How many days a Responses API response can be continued by `previous_response_id`; older ones are deleted (at start, hourly, and when read). 0 keeps them for ever.',
  },
  {
    key: 'gateway.images.maxBytes',
    env: 'OPENCLAW_GATEWAY_IMAGE_MAX_BYTES',
    kind: 'integer',
    description:
      'Largest image (decoded bytes) a chat message may carry, as a data URL or fetched from an allowed host; larger ones get 400 (docs/gateway.md).',
  },
  {
    key: 'gateway.images.maxPerRequest',
    env: 'OPENCLAW_GATEWAY_IMAGES_PER_REQUEST',
    kind: 'integer',
    description:
      'Most images one chat request may carry, over all its messages; more get 400. 0 refuses images.',
  },
  {
    key: 'gateway.images.allowedHosts',
    env: 'OPENCLAW_GATEWAY_IMAGE_HOSTS',
    kind: 'string-list',
    description:
      'Comma-separated hosts (`host` or `host:port`) whose http(s) image URLs the gateway fetches and sends on as data URLs. Empty: only data URLs are accepted.',
  },
  {
    key: 'gateway.images.fetchTimeoutMs',
    env: 'OPENCLAW_GATEWAY_IMAGE_FETCH_TIMEOUT_MS',
    kind: 'integer',
    description: 'How long the gateway waits for an image from an allowed host before answering 400.',
  },
  {
    key: 'sampling.temperature',
    env: 'OPENCLAW_SAMPLING_TEMPERATURE',
    kind: 'number',
    defaultNote: "the model's `generation_config.json`, else `1`",
    description:
      'Temperature the gateway sends when a client leaves it out (it always sends one, so every turn records the temperature the engine used).',
  },
  {
    key: 'sampling.topP',
    env: 'OPENCLAW_SAMPLING_TOP_P',
    kind: 'number',
    defaultNote: "the model's `generation_config.json`, else `1`",
    description: '`top_p` the gateway sends when a client leaves it out.',
  },
  {
    key: 'sampling.topK',
    env: 'OPENCLAW_SAMPLING_TOP_K',
    kind: 'integer',
    defaultNote: "the model's `generation_config.json`, else `-1` (off)",
    description: '`top_k` the gateway sends when a client leaves it out.',
  },
  {
    key: 'sampling.minP',
    env: 'OPENCLAW_SAMPLING_MIN_P',
    kind: 'number',
    defaultNote: "the model's `generation_config.json`, else `0`",
    description: '`min_p` the gateway sends when a client leaves it out.',
  },
  {
    key: 'engine.kind',
    env: 'OPENCLAW_ENGINE_KIND',
    kind: 'enum',
    description:
      "Which engine serves the policy at `engine.url`: `reference` (the project's engine), `sglang` or `vllm` (docs/engines.md). `dev` and `engine` start a vLLM themselves for `vllm`.",
  },
  {
    key: 'engine.url',
    env: 'OPENCLAW_ENGINE_URL',
    kind: 'string',
    description: 'Base URL of the policy engine (without `/v1`).',
  },
  {
    key: 'engine.model',
    env: 'OPENCLAW_MODEL',
    kind: 'string',
    defaultNote: 'a tiny random model built in `<dataDir>/tiny-model`',
    description:
      'Hugging Face model folder the reference engine serves and trains (`openclaw-rl engine`, `dev`).',
  },
  {
    key: 'engine.device',
    env: 'OPENCLAW_DEVICE',
    kind: 'enum',
    description: 'Device of the reference engine: `cpu` or `cuda`.',
  },
  {
    key: 'engine.loraRank',
    env: 'OPENCLAW_LORA_RANK',
    kind: 'integer',
    description:
      'LoRA rank of the trainer (reference, slime on its FSDP backend with alpha 2×rank, Tinker, Fireworks); 0 trains all weights (Tinker: its default rank).',
  },
  {
    key: 'engine.args',
    env: 'OPENCLAW_ENGINE_ARGS',
    kind: 'string',
    description:
      'Extra arguments, separated by spaces, for the engine server the project starts (`dev`, `engine`, `worker gpu`), e.g. `--max-model-len 8192`.',
  },
  {
    key: 'engine.token',
    env: 'OPENCLAW_ENGINE_TOKEN',
    kind: 'string',
    description:
      'Bearer token of the engines and trainers: the reference engine, its trainer and the Tinker sidecar require it on every route but `/health` when set, and refuse to listen beyond loopback without one; the vLLM and SGLang servers the project starts get it as their API key (vLLM guards only its `/v1` routes, docs/security.md); every project process sends it to the engines it calls.',
  },
  {
    key: 'engine.tokenFile',
    env: 'OPENCLAW_ENGINE_TOKEN_FILE',
    kind: 'string',
    description:
      'File holding `engine.token` (first line; `openclaw-rl keys init` and compose make `<keys>/engine-token`); used when `engine.token` is empty.',
  },
  {
    key: 'engine.allowNoToken',
    env: 'OPENCLAW_ENGINE_ALLOW_NO_TOKEN',
    kind: 'boolean',
    description:
      'Let the reference engine, the Tinker sidecar and a vLLM that `dev`/`engine` start listen beyond loopback without a token (`--allow-no-token`); otherwise they refuse to start.',
  },
  {
    key: 'temporal.address',
    env: 'TEMPORAL_ADDRESS',
    kind: 'string',
    defaultNote: "the Temporal profile's address, else `127.0.0.1:7233`",
    description:
      'Temporal frontend `host:port`. TLS, mTLS and API keys come from the standard `TEMPORAL_*` variables and `temporal.toml` profiles (docs/security.md); `dev` starts a dev server here when none answers.',
  },
  {
    key: 'temporal.namespace',
    env: 'TEMPORAL_NAMESPACE',
    kind: 'string',
    defaultNote: "the Temporal profile's namespace, else `default`",
    description: 'Temporal namespace of every workflow.',
  },
  {
    key: 'temporal.taskQueue',
    env: 'OPENCLAW_CONTROL_TASK_QUEUE',
    kind: 'string',
    description: 'Task queue of the control worker (sessions, scoring, training loop).',
  },
  {
    key: 'temporal.heartbeatTimeoutMs',
    env: 'OPENCLAW_HEARTBEAT_TIMEOUT_MS',
    kind: 'integer',
    description:
      'Long activities (judge calls, training steps, publishing) heartbeat; a worker silent this long is presumed dead and its activity retried.',
  },
] as const satisfies readonly ConfigOption[];
