// The gateway's bearer keys: those listed in the configuration plus those in the keys file (one per line, `#`
// starts a comment; a second word names the key's tenant). `openclaw-rl keys init` and compose's first start
// write the file with one new key; `keys add --tenant NAME` adds one.

import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { OpenClawConfig } from '../core/config.js';
import { type ApiKey, TENANT_NAME, TENANT_NAME_RULE } from '../core/tenant.js';
import { replaceSecretFile, writeSecretFile } from './secret-file.js';

const tenantNameSchema = z.string().regex(TENANT_NAME, TENANT_NAME_RULE);

/** Where the keys file is: the configured path, else `<dataDir>/keys/api-keys`. */
export function apiKeysFile(config: OpenClawConfig): string {
  return config.gateway.apiKeysFile || join(config.dataDir, 'keys', 'api-keys');
}

/**
 * The keys in a keys file: one per line, `<key>` or `<key> <tenant>` (a key without a tenant is a tenant of its
 * own, named after the key), anything after `#` a comment. A malformed line is an error naming its number.
 */
export function parseApiKeysFile(text: string): ApiKey[] {
  const keys: ApiKey[] = [];
  text.split('\n').forEach((raw, index) => {
    const words = raw.replace(/#.*$/, '').trim().split(/\s+/).filter(Boolean);
    if (words.length === 0) return;
    const [key, tenant, ...rest] = words as [string, ...string[]];
    if (rest.length > 0)
      throw new Error(
        `line ${index + 1}: a line is a key and, optionally, its tenant (found ${words.length} words)`,
      );
    if (tenant === undefined) {
      keys.push({ key });
      return;
    }
    const parsed = tenantNameSchema.safeParse(tenant);
    if (!parsed.success) throw new Error(`line ${index + 1}: ${parsed.error.issues[0]?.message}`);
    keys.push({ key, tenant });
  });
  return keys;
}

export interface ConfiguredApiKeys {
  keys: ApiKey[];
  /** Where they came from, for the gateway's start-up log (never the keys themselves). */
  sources: string[];
}

/**
 * Every key the gateway accepts. A keys file that was named explicitly must exist; the default one is read
 * only when it does.
 */
export function configuredApiKeys(config: OpenClawConfig): ConfiguredApiKeys {
  const keys: ApiKey[] = config.gateway.apiKeys.map((key) => ({ key }));
  const sources = keys.length > 0 ? [`OPENCLAW_API_KEYS (${keys.length})`] : [];
  const file = apiKeysFile(config);
  if (config.gateway.apiKeysFile || existsSync(file)) {
    let fromFile: ApiKey[];
    try {
      fromFile = parseApiKeysFile(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new Error(`gateway.apiKeysFile (OPENCLAW_API_KEYS_FILE) ${file}: ${(error as Error).message}`);
    }
    if (fromFile.length === 0) throw new Error(`the API keys file ${file} holds no key`);
    keys.push(...fromFile);
    sources.push(`${file} (${fromFile.length})`);
  }
  return { keys: distinctKeys(keys), sources };
}

/** Each key once; one key given two tenants is refused (it could not say whose sessions it reaches). */
function distinctKeys(keys: readonly ApiKey[]): ApiKey[] {
  const byKey = new Map<string, ApiKey>();
  for (const entry of keys) {
    const seen = byKey.get(entry.key);
    if (seen === undefined) byKey.set(entry.key, entry);
    else if (seen.tenant !== entry.tenant)
      throw new Error('an API key is listed twice with different tenants; give each key one tenant');
  }
  return [...byKey.values()];
}

/** A new bearer key: 32 random bytes, base64url, with a prefix secret scanners can match. */
export function newApiKey(): string {
  return `ocrl-${randomBytes(32).toString('base64url')}`;
}

/** Adds a new key for `tenant` to the keys file (created when missing); returns the key. */
export async function addApiKey(path: string, tenant: string): Promise<string> {
  const parsed = tenantNameSchema.safeParse(tenant);
  if (!parsed.success) throw new Error(`tenant "${tenant}": ${TENANT_NAME_RULE}`);
  const name = parsed.data;
  const key = newApiKey();
  const line = `${key} ${name}\n`;
  if (await writeSecretFile(path, `${KEYS_FILE_HEADER}${line}`)) return key;
  const text = await readFile(path, 'utf8');
  parseApiKeysFile(text);
  await replaceSecretFile(path, `${text}${text === '' || text.endsWith('\n') ? '' : '\n'}${line}`);
  return key;
}

const KEYS_FILE_HEADER =
  '# Bearer keys of the openclaw-rl gateway, one per line: <key> [<tenant>]. Add a line to add a key.\n';

/** Creates the keys file with one new key unless it exists. */
export async function ensureApiKeysFile(path: string): Promise<{ created: boolean }> {
  if (existsSync(path)) return { created: false };
  const text = `${KEYS_FILE_HEADER}${newApiKey()}\n`;
  return { created: await writeSecretFile(path, text) };
}
