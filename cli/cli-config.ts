import { loadConfig, type OpenClawConfig, type OpenClawConfigInput } from '../core/config.js';

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
  judgeApiKey?: string;
  engineUrl?: string;
  /** `--engine-kind` (every command) or its short form `--engine` (dev). */
  engineKind?: string;
  engine?: string;
  model?: string;
  device?: string;
  trainer?: string;
}

function integer(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed)) throw new Error(`${flag} must be an integer, got "${value}"`);
  return parsed;
}

/**
 * Defaults < environment < flags. The judge and the teacher follow the engine unless set: as in the
 * original, the policy engine judges its own turns when no judge is configured.
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
  const batchSize = integer('--batch-size', flags.batchSize);
  if (batchSize !== undefined) overrides.training = { batchSize };
  if (flags.temporalAddress !== undefined) overrides.temporal = { address: flags.temporalAddress };
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
  if (flags.judgeApiKey !== undefined) judge.apiKey = flags.judgeApiKey;
  if (Object.keys(judge).length > 0) overrides.judge = judge;
  if (flags.trainer !== undefined)
    overrides.trainer = { backend: flags.trainer as NonNullable<OpenClawConfigInput['trainer']>['backend'] };

  const first = loadConfig(env, overrides);
  if (!first.ok) throw new Error(first.error);
  const engineUrl = first.config.engine.url.replace(/\/+$/, '');
  const follow: OpenClawConfigInput = {};
  if (judge.baseUrl === undefined && !env.OPENCLAW_JUDGE_URL)
    follow.judge = { ...judge, baseUrl: `${engineUrl}/v1` };
  if (!env.OPENCLAW_TEACHER_URL) follow.teacher = { url: engineUrl };
  const final = loadConfig(env, { ...overrides, ...follow });
  if (!final.ok) throw new Error(final.error);
  return final.config;
}
