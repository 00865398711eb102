// The codec server's token: whoever holds it can decrypt any payload, so the server refuses every codec call
// without it. `codecServer.token`, else the first line of `codecServer.tokenFile` (`<dataDir>/keys/codec-token`),
// which `keys init`, `codec-server` and `dev` create like the other key files (0600, written once).

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OpenClawConfig } from '../core/config.js';
import { writeSecretFile } from './secret-file.js';

/** Where the token file is: the configured path, else `<dataDir>/keys/codec-token`. */
export function codecTokenFile(config: OpenClawConfig): string {
  return config.codecServer.tokenFile || join(config.dataDir, 'keys', 'codec-token');
}

/** The configured token, else the token file's first line; null when neither exists. */
export function codecToken(config: OpenClawConfig): string | null {
  if (config.codecServer.token) return config.codecServer.token;
  const file = codecTokenFile(config);
  if (!existsSync(file)) return null;
  const token = readFileSync(file, 'utf8').split('\n')[0]?.trim() ?? '';
  if (!token) throw new Error(`the codec token file ${file} is empty`);
  return token;
}

/** The token, creating the token file with a new one when no token is configured and the file is missing. */
export async function ensureCodecToken(config: OpenClawConfig): Promise<{ token: string; created: boolean }> {
  const existing = codecToken(config);
  if (existing) return { token: existing, created: false };
  // URL-safe: the Temporal UI carries it as a path segment of its codec endpoint.
  const created = await writeSecretFile(
    codecTokenFile(config),
    `ocrl-codec-${randomBytes(32).toString('base64url')}\n`,
  );
  const token = codecToken(config);
  if (!token) throw new Error(`could not create the codec token file ${codecTokenFile(config)}`);
  return { token, created };
}

/** Compares in constant time, so the answer's timing does not reveal how much of a guess was right. */
export function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
