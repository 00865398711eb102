import { loadConfig, type OpenClawConfig, type OpenClawConfigInput } from '../core/config.js';
import { temporalProfile } from '../temporal/connection.js';
import { integer } from './options.js';
import { secretFromFlags } from './secret-flags.js';

/** Flags shared by the commands; each also has an environment variable (docs/configuration.md). */
export interface CommonFlags {
  method?: string;
  batchSize?: string;
  port?: string;
  host?: string;
  temporalAddress?: string;
  dataDir?: string;
  runId?: string;
  judgeUrl?: string;
  judgeModel?: string;
  /** Refused: keys are read from `judgeApiKeyFile` or OPENCLAW_JUDGE_API_KEY (cli/secret-flags.ts). */
  judgeApiKey?: string;
  judgeApiKeyFile?: string;
  engineUrl?: string;
  /** `--engine-kind` (every command) or its short form `--engine` (dev). */
  engineKind?: string;
  engine?: string;
  model?: string;
  device?: string;
  trainer?: string;
  allowNoKeys?: boolean;
  /** A worker process's `/metrics` port (`0` off). */
  metricsPort?: string;
}

/**
 * Defaults < Temporal profile < environment < flags (the profile, a `temporal.toml` that envconfig finds,
 * only gives the Temporal address and namespace here; connect.ts takes its TLS and API key). The judge and the
 * teacher are the frozen judge engine unless set (the base checkpoint beside the policy, never updated, as the
 * original's PRM engine).
 */
export function configFromFlags(flags: CommonFlags, env: NodeJS.ProcessEnv = process.env): OpenClawConfig {
  const overrides: OpenClawConfigInput = {};
  if (flags.runId !== undefined) overrides.runId = flags.runId;
  if (flags.method !== undefined) overrides.method = flags.method as OpenClawConfigInput['method'];
  if (flags.dataDir !== undefined) overrides.dataDir = flags.dataDir;
  const port = integer('--port', flags.port);
  if (port !== undefined || flags.host !== undefined) {
    overrides.gateway = {
      ...(port !== undefined && { port }),
      ...(flags.host !== undefined && { host: flags.host }),
    };
  }
  if (flags.allowNoKeys) overrides.gateway = { ...overrides.gateway, allowNoKeys: true };
  const batchSize = integer('--batch-size', flags.batchSize);
  if (batchSize !== undefined) overrides.training = { batchSize };
  const profile = temporalProfile(env);
  const temporalAddress = flags.temporalAddress ?? profile.connectionOptions.address;
  if (temporalAddress || profile.namespace)
    overrides.temporal = {
      ...(temporalAddress && { address: temporalAddress }),
      ...(profile.namespace && { namespace: profile.namespace }),
    };
  const engine: NonNullable<OpenClawConfigInput['engine']> = {};
  if (flags.engineUrl !== undefined) engine.url = flags.engineUrl;
  const kind = flags.engineKind ?? flags.engine;
  if (kind !== undefined) engine.kind = kind as NonNullable<OpenClawConfigInput['engine']>['kind'];
  if (flags.model !== undefined) engine.model = flags.model;
  if (flags.device !== undefined) engine.device = flags.device as 'cpu' | 'cuda';
  if (Object.keys(engine).length > 0) overrides.engine = engine;
  const judge: NonNullable<OpenClawConfigInput['judge']> = {};
  if (flags.judgeUrl !== undefined) judge.baseUrl = flags.judgeUrl;
  if (flags.judgeModel !== undefined) judge.model = flags.judgeModel;
  const judgeKey = secretFromFlags('judge-api-key', 'OPENCLAW_JUDGE_API_KEY', {
    inline: flags.judgeApiKey,
    file: flags.judgeApiKeyFile,
  });
  if (judgeKey !== undefined) judge.apiKey = judgeKey;
  if (Object.keys(judge).length > 0) overrides.judge = judge;
  if (flags.trainer !== undefined)
    overrides.trainer = { backend: flags.trainer as NonNullable<OpenClawConfigInput['trainer']>['backend'] };

  const metricsPort = integer('--metrics-port', flags.metricsPort);
  if (metricsPort !== undefined) overrides.metrics = { port: metricsPort };

  const loaded = loadConfig(env, overrides);
  if (!loaded.ok) throw new Error(loaded.error);
  return loaded.config;
}
