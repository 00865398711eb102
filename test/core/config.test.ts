import { describe, expect, it } from 'vitest';
import { loadConfig, type OpenClawConfig, parseConfig } from '../../core/config.js';
import { CONFIG_OPTIONS, ENV_VARS } from '../../core/config-options.js';
import { gateSettingsOf } from '../../core/config-schema.js';

function load(env: Record<string, string>, overrides = {}): OpenClawConfig {
  const result = loadConfig(env, overrides);
  if (!result.ok) throw new Error(result.error);
  return result.config;
}

function leafKeys(value: unknown, prefix = ''): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [prefix];
  // A record-valued option (training.tenantWeights) defaults to an empty object: one option all the same.
  if (Object.keys(value).length === 0) return [prefix];
  return Object.entries(value).flatMap(([key, child]) => leafKeys(child, prefix ? `${prefix}.${key}` : key));
}

describe('loadConfig defaults', () => {
  it('gives the documented defaults with an empty environment', () => {
    expect(load({})).toEqual({
      runId: 'default',
      method: 'combine',
      dataDir: 'data',
      gateway: {
        host: '127.0.0.1',
        port: 8000,
        apiKeys: [],
        apiKeysFile: '',
        allowNoKeys: false,
        rateLimitPerMinute: 600,
        bodyLimitBytes: 16 * 1024 * 1024,
        idempotencyTtlMs: 86_400_000,
        responsesRetentionDays: 30,
        images: { maxBytes: 10 * 1024 * 1024, maxPerRequest: 16, allowedHosts: [], fetchTimeoutMs: 10_000 },
      },
      // Unset: the model's generation_config.json, else the engines' neutral values.
      sampling: {},
      engine: {
        kind: 'reference',
        url: 'http://127.0.0.1:30000',
        model: '',
        device: 'cpu',
        loraRank: 0,
        args: '',
        token: '',
        tokenFile: '',
        allowNoToken: false,
      },
      temporal: {
        address: '127.0.0.1:7233',
        namespace: 'default',
        taskQueue: 'control',
        heartbeatTimeoutMs: 30_000,
      },
      metrics: { host: '127.0.0.1' },
      tracing: { otlpEndpoint: '' },
      judgeEngine: { url: 'http://127.0.0.1:30001', model: '', kind: 'reference' },
      judge: {
        baseUrl: 'http://127.0.0.1:30001/v1',
        model: 'default',
        apiKey: '',
        votes: 1,
        temperature: 0.6,
        vision: false,
        maxTokens: 8192,
      },
      teacher: { url: 'http://127.0.0.1:30001', kind: 'reference', topK: 0 },
      training: {
        batchSize: 16,
        learningRate: 1e-5,
        weightDecay: 0.1,
        betas: [0.9, 0.98],
        maxPolicyLag: 2,
        stalenessPolicy: 'rollout-logprobs',
        continueAsNewAfterSteps: 50,
        continueAsNewAfterEvents: 10_000,
        keepCheckpoints: 3,
        maxSamplesPerTenant: 0,
        tenantWeights: {},
        gate: { evalSet: '', scorer: 'judge', threshold: 0, samples: 4, maxTokens: 64 },
      },
      loss: {
        epsClip: 0.2,
        epsClipHigh: 0.28,
        klCoef: 0,
        klType: 'low_var_kl',
        entropyCoef: 0,
        wRl: 1,
        wOpd: 1,
      },
      trainer: {
        backend: 'reference',
        taskQueue: '',
        image: '',
        epochCommand: 'slime',
        sharedDir: '',
        baseModel: '',
        gpus: 1,
        gpuIds: [],
        shmBytes: 16 * 2 ** 30,
        extraArgs: '',
        tinkerUrl: '',
        fireworksUrl: '',
        fireworksBaseModel: '',
        fireworksTrainingShape: '',
        fireworksDeployment: '',
        fireworksTrainerJob: '',
        url: '',
      },
      store: {
        backend: 'file',
        url: '',
        outboxLeaseMs: 10_000,
        outboxYieldMs: 10_000,
        journal: true,
        poolSize: 20,
      },
      payloads: { encryption: 'auto', keys: [], keyId: '', keysFile: '' },
      codecServer: { host: '127.0.0.1', port: 8234, corsOrigins: [], hosts: [], token: '', tokenFile: '' },
      session: {
        idleTimeoutMs: 1_800_000,
        reopenHorizonMs: 86_400_000,
        superseded: 'exclude',
        continueAsNewAfterTurns: 200,
      },
      feedback: { rating: 'override', correction: 'as-given' },
      adapters: { tenants: [], rank: 8, maxLoaded: 16, onBaseChange: 'keep' },
    });
  });

  it('selects the PostgreSQL store, which needs its URL', () => {
    expect(
      load({ OPENCLAW_STORE: 'postgres', OPENCLAW_STORE_URL: 'postgres://u@db:5432/openclaw' }).store,
    ).toEqual({
      backend: 'postgres',
      url: 'postgres://u@db:5432/openclaw',
      outboxLeaseMs: 10_000,
      outboxYieldMs: 10_000,
      journal: true,
      poolSize: 20,
    });
    const missing = loadConfig({ OPENCLAW_STORE: 'postgres' });
    expect(missing.ok).toBe(false);
    if (!missing.ok) expect(missing.error).toContain('store.url (OPENCLAW_STORE_URL)');
    const wrong = loadConfig({ OPENCLAW_STORE_URL: 'mysql://db' });
    expect(wrong.ok).toBe(false);
  });

  it('picks judge votes and reply length by method, as the original scripts do', () => {
    expect(load({ OPENCLAW_METHOD: 'rl' }).judge).toMatchObject({ votes: 3, maxTokens: 4096 });
    expect(load({ OPENCLAW_METHOD: 'opd' }).judge).toMatchObject({ votes: 1, maxTokens: 8192 });
    expect(load({ OPENCLAW_METHOD: 'rl', OPENCLAW_JUDGE_VOTES: '5' }).judge.votes).toBe(5);
  });
});

describe('loadConfig from the environment', () => {
  it('parses numbers, lists and pairs', () => {
    const config = load({
      OPENCLAW_GATEWAY_PORT: ' 9000 ',
      OPENCLAW_API_KEYS: 'k1, k2,,',
      OPENCLAW_ADAM_BETAS: '0.8,0.95',
      OPENCLAW_LEARNING_RATE: '2e-6',
      OPENCLAW_COMBINE_W_OPD: '0.5',
      OPENCLAW_STALENESS_POLICY: 'drop',
    });
    expect(config.gateway).toMatchObject({ port: 9000, apiKeys: ['k1', 'k2'] });
    expect(config.training).toMatchObject({
      betas: [0.8, 0.95],
      learningRate: 2e-6,
      stalenessPolicy: 'drop',
    });
    expect(config.loss.wOpd).toBe(0.5);
  });

  it('parses group training: a cap per tenant and weights as name=number pairs', () => {
    const config = load({
      OPENCLAW_MAX_SAMPLES_PER_TENANT: '2',
      OPENCLAW_TENANT_WEIGHTS: 'alice=2, bob=0.5,',
    });
    expect(config.training).toMatchObject({ maxSamplesPerTenant: 2, tenantWeights: { alice: 2, bob: 0.5 } });
    const bad = loadConfig({ OPENCLAW_TENANT_WEIGHTS: 'alice=lots' });
    expect(bad.ok ? '' : bad.error).toContain('training.tenantWeights (OPENCLAW_TENANT_WEIGHTS)');
    expect(loadConfig({ OPENCLAW_TENANT_WEIGHTS: 'alice=-1' }).ok).toBe(false);
  });

  it('parses the publish gate, which needs the reference trainer and a known scorer', () => {
    const config = load({
      OPENCLAW_GATE_EVAL_SET: '/data/eval.jsonl',
      OPENCLAW_GATE_SCORER: 'style:vowels',
      OPENCLAW_GATE_THRESHOLD: '0.05',
      OPENCLAW_GATE_SAMPLES: '2',
    });
    expect(config.training.gate).toEqual({
      evalSet: '/data/eval.jsonl',
      scorer: 'style:vowels',
      threshold: 0.05,
      samples: 2,
      maxTokens: 64,
    });
    expect(gateSettingsOf(config.training.gate)).toEqual(config.training.gate);
    expect(gateSettingsOf(load({}).training.gate)).toBeUndefined();
    const unknown = loadConfig({ OPENCLAW_GATE_SCORER: 'style:nope' });
    expect(unknown.ok ? '' : unknown.error).toContain('training.gate.scorer (OPENCLAW_GATE_SCORER)');
    const tinker = loadConfig({ OPENCLAW_GATE_EVAL_SET: '/data/eval.jsonl', OPENCLAW_TRAINER: 'tinker' });
    expect(tinker.ok ? '' : tinker.error).toMatch(/publish gate .* only the reference trainer can/);
  });

  it('parses booleans and rejects other words', () => {
    expect(load({ OPENCLAW_GATEWAY_ALLOW_NO_KEYS: 'true' }).gateway.allowNoKeys).toBe(true);
    expect(load({ OPENCLAW_GATEWAY_ALLOW_NO_KEYS: '1' }).gateway.allowNoKeys).toBe(true);
    expect(load({ OPENCLAW_GATEWAY_ALLOW_NO_KEYS: 'FALSE' }).gateway.allowNoKeys).toBe(false);
    const result = loadConfig({ OPENCLAW_GATEWAY_ALLOW_NO_KEYS: 'yes please' });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(/gateway\.allowNoKeys \(OPENCLAW_GATEWAY_ALLOW_NO_KEYS\)/);
  });

  it('treats empty variables as unset', () => {
    expect(load({ OPENCLAW_BATCH_SIZE: '', OPENCLAW_METHOD: '  ' })).toMatchObject({
      method: 'combine',
      training: { batchSize: 16 },
    });
  });

  it('lets overrides win over the environment', () => {
    const config = load(
      { OPENCLAW_BATCH_SIZE: '32', OPENCLAW_JUDGE_MODEL: 'env-model' },
      { training: { batchSize: 4 }, judge: { temperature: 0 } },
    );
    expect(config.training.batchSize).toBe(4);
    expect(config.judge).toMatchObject({ model: 'env-model', temperature: 0 });
  });
});

describe('loadConfig errors', () => {
  it('names the field and its variable', () => {
    expect(loadConfig({ OPENCLAW_JUDGE_VOTES: '0' })).toEqual({
      ok: false,
      error:
        'Invalid configuration: judge.votes (OPENCLAW_JUDGE_VOTES): Too small: expected number to be >=1',
    });
    const notANumber = loadConfig({ OPENCLAW_BATCH_SIZE: 'sixteen' });
    expect(notANumber.ok === false && notANumber.error).toMatch(
      /training\.batchSize \(OPENCLAW_BATCH_SIZE\): .*number/,
    );
  });

  it('rejects bad enums, URLs, run ids and pairs', () => {
    const result = loadConfig({
      OPENCLAW_METHOD: 'ppo',
      OPENCLAW_ENGINE_URL: 'localhost:30000',
      OPENCLAW_RUN_ID: 'a/b',
      OPENCLAW_ADAM_BETAS: '0.9',
    });
    expect(result.ok).toBe(false);
    const error = result.ok ? '' : result.error;
    expect(error).toContain('method (OPENCLAW_METHOD)');
    expect(error).toContain('engine.url (OPENCLAW_ENGINE_URL): expected an http(s) URL');
    expect(error).toContain('runId (OPENCLAW_RUN_ID)');
    expect(error).toContain('training.betas (OPENCLAW_ADAM_BETAS)');
  });

  it('reads the session, idempotency and sampling options from the environment', () => {
    const config = load({
      OPENCLAW_SESSION_REOPEN_HORIZON_MS: '0',
      OPENCLAW_SESSION_SUPERSEDED: 'negative',
      OPENCLAW_IDEMPOTENCY_TTL_MS: '3600000',
      OPENCLAW_SAMPLING_TEMPERATURE: '0.6',
      OPENCLAW_SAMPLING_TOP_K: '20',
    });
    expect(config.session).toMatchObject({ reopenHorizonMs: 0, superseded: 'negative' });
    expect(config.gateway.idempotencyTtlMs).toBe(3_600_000);
    expect(config.sampling).toEqual({ temperature: 0.6, topK: 20 });
    const bad = loadConfig({ OPENCLAW_SESSION_SUPERSEDED: 'maybe', OPENCLAW_SAMPLING_TOP_P: '0' });
    expect(bad.ok ? '' : bad.error).toContain('session.superseded (OPENCLAW_SESSION_SUPERSEDED)');
    expect(bad.ok ? '' : bad.error).toContain('sampling.topP (OPENCLAW_SAMPLING_TOP_P)');
  });

  it('refuses a slime trainer without an image or a base model, naming the variables', () => {
    const result = loadConfig({ OPENCLAW_TRAINER: 'slime' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toContain('trainer.image (OPENCLAW_TRAINER_IMAGE)');
    expect(result.error).toContain('trainer.baseModel (OPENCLAW_TRAINER_BASE_MODEL)');
    // The engine's model serves as the base when the trainer names none.
    const ok = load({ OPENCLAW_TRAINER: 'slime', OPENCLAW_TRAINER_IMAGE: 'my/slime', OPENCLAW_MODEL: '/m' });
    expect(ok.trainer.backend).toBe('slime');
    expect(loadConfig({ OPENCLAW_TRAINER: 'megatron' }).ok).toBe(false);
    expect(loadConfig({ OPENCLAW_TINKER_URL: 'tinker://x' }).ok).toBe(false);
  });

  it('judges and teaches with a frozen engine beside the policy unless told otherwise', () => {
    const frozen = load({ OPENCLAW_ENGINE_URL: 'http://10.0.0.5:31000', OPENCLAW_MODEL: '/models/base' });
    expect(frozen.judgeEngine).toEqual({
      url: 'http://10.0.0.5:31001',
      model: '/models/base',
      kind: 'reference',
    });
    expect(frozen.teacher.kind).toBe('reference');
    // A vLLM policy has its reference trainer on the next port: the frozen engine takes the one after.
    expect(load({ OPENCLAW_ENGINE_KIND: 'vllm' }).judgeEngine.url).toBe('http://127.0.0.1:30002');
    expect(frozen.judge.baseUrl).toBe('http://10.0.0.5:31001/v1');
    expect(frozen.teacher.url).toBe('http://10.0.0.5:31001');
    const external = load({
      OPENCLAW_JUDGE_ENGINE_URL: 'http://judge:30000/',
      OPENCLAW_JUDGE_URL: 'https://api.example.com/v1',
    });
    expect(external.judge.baseUrl).toBe('https://api.example.com/v1');
    expect(external.teacher.url).toBe('http://judge:30000');
  });

  it('allows top-K distillation only for opd runs', () => {
    const result = loadConfig({ OPENCLAW_TEACHER_TOP_K: '50' });
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.error).toContain(
      'teacher.topK (OPENCLAW_TEACHER_TOP_K): top-K distillation',
    );
    expect(load({ OPENCLAW_TEACHER_TOP_K: '50', OPENCLAW_METHOD: 'opd' }).teacher.topK).toBe(50);
  });

  it('refuses opd and combine at a sampling temperature their SGLang or vLLM teacher cannot score at', () => {
    // An operator samples at Qwen3's 0.6 with an SGLang teacher: SGLang scores the teacher prefill at 1 only,
    // so every OPD advantage would compare a T = 1 teacher with π_old at 0.6.
    const sglang = { OPENCLAW_SAMPLING_TEMPERATURE: '0.6', OPENCLAW_JUDGE_ENGINE_KIND: 'sglang' };
    const refused = loadConfig(sglang);
    expect(refused.ok).toBe(false);
    const error = refused.ok ? '' : refused.error;
    expect(error).toContain('sampling.temperature (OPENCLAW_SAMPLING_TEMPERATURE)');
    expect(error).toContain("combine needs the teacher's log-probs at the sample's temperature 0.6");
    expect(error).toContain('SGLang as teacher (teacher.kind sglang) scores them at temperature 1 only');
    // A vLLM policy that is its own teacher (teacher.url set, no kind): vLLM's prompt log-probs are at 1 too.
    const vllm = loadConfig({
      OPENCLAW_METHOD: 'opd',
      OPENCLAW_SAMPLING_TEMPERATURE: '0.7',
      OPENCLAW_ENGINE_KIND: 'vllm',
      OPENCLAW_TEACHER_URL: 'http://127.0.0.1:30000',
    });
    expect(vllm.ok ? '' : vllm.error).toContain('opd needs the teacher');
    expect(vllm.ok ? '' : vllm.error).toContain('vLLM as teacher (teacher.kind vllm)');
    // What each teacher can score: rl has none, T = 1 and greedy are T = 1, the reference engine scores at T.
    expect(load({ ...sglang, OPENCLAW_METHOD: 'rl' }).method).toBe('rl');
    expect(load({ ...sglang, OPENCLAW_SAMPLING_TEMPERATURE: '1' }).sampling.temperature).toBe(1);
    expect(load({ ...sglang, OPENCLAW_SAMPLING_TEMPERATURE: '0' }).sampling.temperature).toBe(0);
    expect(load({ ...sglang, OPENCLAW_TEACHER_KIND: 'reference' }).teacher.kind).toBe('reference');
    expect(load({ OPENCLAW_SAMPLING_TEMPERATURE: '0.6' }).teacher.kind).toBe('reference');
  });

  it('rejects unknown override fields instead of ignoring a typo', () => {
    const result = parseConfig({ training: { batchsize: 8 } });
    expect(result).toEqual({
      ok: false,
      error: 'Invalid configuration: training: Unrecognized key: "batchsize"',
    });
  });
});

describe('the option table', () => {
  it('has exactly one entry per config field, each with its own variable', () => {
    const keys = CONFIG_OPTIONS.map((o) => o.key);
    // Options without a default (unset unless given) appear once they are set.
    const withOptional = load(
      {},
      { sampling: { temperature: 1, topP: 1, topK: -1, minP: 0 }, metrics: { port: 9464 } },
    );
    expect([...keys].sort()).toEqual(leafKeys(withOptional).sort());
    const envs = CONFIG_OPTIONS.map((o) => o.env);
    expect(new Set(envs).size).toBe(envs.length);
    expect(ENV_VARS['judge.votes']).toBe('OPENCLAW_JUDGE_VOTES');
  });

  it('every variable round-trips its default value through the environment', () => {
    const defaults = load({});
    const env: Record<string, string> = {};
    for (const option of CONFIG_OPTIONS) {
      let value: unknown = defaults;
      for (const part of option.key.split('.')) value = (value as Record<string, unknown>)[part];
      if (value === undefined) continue; // no default: unset round-trips as unset
      env[option.env] = Array.isArray(value)
        ? value.join(',')
        : typeof value === 'object' && value !== null
          ? Object.entries(value)
              .map(([key, n]) => `${key}=${n}`)
              .join(',')
          : String(value);
    }
    expect(load(env)).toEqual(defaults);
  });
});
