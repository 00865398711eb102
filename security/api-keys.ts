// The gateway's bearer keys: those listed in the configuration plus those in the keys file (one per line, `#`
// starts a comment). `openclaw-rl keys init` and compose's first start write the file with one new key.

import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OpenClawConfig } from '../core/config.js';
import { writeSecretFile } from './secret-file.js';

/** Where the keys file is: the configured path, else `<dataDir>/keys/api-keys`. */
export function apiKeysFile(config: OpenClawConfig): string {
  return config.gateway.apiKeysFile || join(config.dataDir, 'keys', 'api-keys');
}

/** The keys in a keys file; a key is one line, anything after `#` is a comment. */
export function parseApiKeysFile(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '');
}

export interface ConfiguredApiKeys {
  keys: string[];
  /** Where they came from, for the gateway's start-up log (never the keys themselves). */
  sources: string[];
}

/**
 * Every key the gateway accepts. A keys file that was named explicitly must exist; the default one is read
 * only when it does.
 */
export function configuredApiKeys(config: OpenClawConfig): ConfiguredApiKeys {
  const keys = [...config.gateway.apiKeys];
  const sources = keys.length > 0 ? [`OPENCLAW_API_KEYS (${keys.length})`] : [];
  const file = apiKeysFile(config);
  if (config.gateway.apiKeysFile || existsSync(file)) {
    let fromFile: string[];
    try {
      fromFile = parseApiKeysFile(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new Error(`gateway.apiKeysFile (OPENCLAW_API_KEYS_FILE) ${file}: ${(error as Error).message}`);
    }
    if (fromFile.length === 0) throw new Error(`the API keys file ${file} holds no key`);
    keys.push(...fromFile);
    sources.push(`${file} (${fromFile.length})`);
  }
  return { keys: [...new Set(keys)], sources };
}

/** A new bearer key: 32 random bytes, base64url, with a prefix secret scanners can match. */
export function newApiKey(): string {
  return `ocrl-${randomBytes(32).toString('base64url')}`;
}

/** Creates the keys file with one new key unless it exists. */
export async function ensureApiKeysFile(path: string): Promise<{ created: boolean }> {
  if (existsSync(path)) return { created: false };
  const text = `# Bearer keys of the openclaw-rl gateway, one per line. Add a line to add a key.\n${newApiKey()}\n`;
  return { created: await writeSecretFile(path, text) };
}
