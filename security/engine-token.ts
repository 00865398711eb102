// The bearer token of the engines and trainers the project runs (the reference engine, its trainer, the Tinker
// sidecar): `engine.token`, else the first line of `engine.tokenFile`. Every process sends it to every engine
// it calls (SGLang's and vLLM's `--api-key` check the same header), and hands it to the engines it starts.

import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { OpenClawConfig } from '../core/config.js';
import { writeSecretFile } from './secret-file.js';

export function engineToken(config: OpenClawConfig): string | null {
  if (config.engine.token) return config.engine.token;
  const file = config.engine.tokenFile;
  if (!file) return null;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`engine.tokenFile (OPENCLAW_ENGINE_TOKEN_FILE) ${file}: ${(error as Error).message}`);
  }
  const token = text.split('\n')[0]?.trim() ?? '';
  if (!token) throw new Error(`the engine token file ${file} is empty`);
  return token;
}

/** The headers of every call to an engine or trainer: the bearer token, when one is configured. */
export function engineAuthHeaders(config: OpenClawConfig): Record<string, string> {
  const token = engineToken(config);
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** The environment an engine the project starts reads its token and its open-listener choice from. */
export function engineAccessEnv(config: OpenClawConfig): Record<string, string> {
  const token = engineToken(config);
  return {
    ...(token && { OPENCLAW_ENGINE_TOKEN: token }),
    ...(config.engine.allowNoToken && { OPENCLAW_ENGINE_ALLOW_NO_TOKEN: '1' }),
  };
}

/** Creates the engine token file with a new token unless it exists. */
export async function ensureEngineTokenFile(path: string): Promise<{ created: boolean }> {
  if (existsSync(path)) return { created: false };
  return { created: await writeSecretFile(path, `ocrl-engine-${randomBytes(32).toString('base64url')}\n`) };
}

/** The URLs of the engines the project runs, which all share the engine token: policy, frozen judge, teacher. */
function ownEngineOrigins(config: OpenClawConfig): Set<string> {
  const origins = new Set<string>();
  for (const url of [config.engine.url, config.judgeEngine.url, config.teacher.url]) {
    const origin = originOf(url);
    if (origin) origins.add(origin);
  }
  return origins;
}

function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/**
 * The key of judge calls to `baseUrl` (default `judge.baseUrl`): `judge.apiKey`, else the engine token when the
 * judge is one of the project's own engines (the frozen judge engine, or the policy engine that `eval` lets
 * judge itself; a reference engine, vLLM or SGLang that require it); never the token for a judge elsewhere.
 */
export function judgeApiKey(config: OpenClawConfig, baseUrl: string = config.judge.baseUrl): string {
  if (config.judge.apiKey) return config.judge.apiKey;
  const origin = originOf(baseUrl);
  const ownEngine = origin !== null && ownEngineOrigins(config).has(origin);
  return ownEngine ? (engineToken(config) ?? '') : '';
}
