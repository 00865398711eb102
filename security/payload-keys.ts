// The payload key ring: which AES-256 keys may decrypt Temporal payloads and which one encrypts new ones. Keys
// come from the configuration (`payloads.keys` + `payloads.keyId`) or from a JSON key file, so rotating is
// adding a key and making it current: payloads written under the old key still decrypt.

import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { OpenClawConfig } from '../core/config.js';
import { replaceSecretFile, writeSecretFile } from './secret-file.js';

export const PAYLOAD_KEY_BYTES = 32;

const keyIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, 'a key id is 1-64 letters, digits, ".", "_" or "-"');

const keyMaterialSchema = z
  .string()
  .trim()
  .transform((text, ctx) => {
    const bytes = Buffer.from(text, 'base64');
    if (bytes.length !== PAYLOAD_KEY_BYTES || bytes.toString('base64') !== text.replace(/\s+/g, '')) {
      ctx.addIssue({
        code: 'custom',
        message: `a key is the base64 of ${PAYLOAD_KEY_BYTES} random bytes (openssl rand -base64 32)`,
      });
      return z.NEVER;
    }
    return bytes;
  });

/** The key file's shape: `{"current": "<id>", "keys": {"<id>": "<base64>"}}`. */
export const payloadKeyFileSchema = z
  .strictObject({
    current: keyIdSchema,
    keys: z.record(keyIdSchema, keyMaterialSchema),
  })
  .refine((file) => file.current in file.keys, {
    message: 'the current key id is not one of the keys',
    path: ['current'],
  });

export interface PayloadKeyRing {
  /** The key new payloads are encrypted with. */
  readonly currentId: string;
  readonly keys: ReadonlyMap<string, Buffer>;
}

export interface ResolvedPayloadKeys {
  ring: PayloadKeyRing | null;
  /** Where the keys came from (for logs), or why there are none. */
  source: string;
}

/** Where the key file is: the configured path, else `<dataDir>/keys/payload-keys.json`. */
export function payloadKeysFile(config: OpenClawConfig): string {
  return config.payloads.keysFile || join(config.dataDir, 'keys', 'payload-keys.json');
}

/** A key ring from `<id>:<base64>` entries; `currentId` may be empty when there is exactly one. */
export function keyRingFromEntries(entries: readonly string[], currentId: string): PayloadKeyRing {
  const keys = new Map<string, Buffer>();
  for (const entry of entries) {
    const colon = entry.indexOf(':');
    if (colon <= 0) throw new Error('payloads.keys (OPENCLAW_PAYLOAD_KEYS): each entry is <id>:<base64 key>');
    const id = parseField(keyIdSchema, entry.slice(0, colon), 'payloads.keys (OPENCLAW_PAYLOAD_KEYS)');
    if (keys.has(id))
      throw new Error(`payloads.keys (OPENCLAW_PAYLOAD_KEYS): key id "${id}" is listed twice`);
    keys.set(id, parseField(keyMaterialSchema, entry.slice(colon + 1), `payloads.keys, key "${id}"`));
  }
  const chosen = currentId || (keys.size === 1 ? [...keys.keys()][0] : '');
  if (!chosen)
    throw new Error(
      'payloads.keyId (OPENCLAW_PAYLOAD_KEY_ID): several payload keys are listed; name the one that encrypts',
    );
  if (!keys.has(chosen))
    throw new Error(`payloads.keyId (OPENCLAW_PAYLOAD_KEY_ID): "${chosen}" is not one of payloads.keys`);
  return { currentId: chosen, keys };
}

/** Reads and checks a key file. */
export function readPayloadKeyFile(path: string): PayloadKeyRing {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`payload key file ${path}: ${(error as Error).message}`);
  }
  const file = parseField(payloadKeyFileSchema, json, `payload key file ${path}`);
  return { currentId: file.current, keys: new Map(Object.entries(file.keys)) };
}

/**
 * The configured key ring: `payloads.keys` when listed, else the key file when it exists. None with
 * `encryption: required` is an error; `off` gives none whatever is configured.
 */
export function resolvePayloadKeys(config: OpenClawConfig): ResolvedPayloadKeys {
  const { encryption, keys, keyId } = config.payloads;
  if (encryption === 'off') return { ring: null, source: 'payload encryption is off (payloads.encryption)' };
  if (keys.length > 0) return { ring: keyRingFromEntries(keys, keyId), source: 'OPENCLAW_PAYLOAD_KEYS' };
  const file = payloadKeysFile(config);
  if (existsSync(file)) return { ring: readPayloadKeyFile(file), source: file };
  if (encryption === 'required')
    throw new Error(
      `payload encryption is required (payloads.encryption) but no key is configured: set OPENCLAW_PAYLOAD_KEYS, or create ${file} with \`openclaw-rl keys init\``,
    );
  return { ring: null, source: `no payload key (OPENCLAW_PAYLOAD_KEYS, ${file})` };
}

export function newPayloadKey(): Buffer {
  return randomBytes(PAYLOAD_KEY_BYTES);
}

/** A key id that sorts by creation time, e.g. `k20250101T120000Z-3f9a`. */
export function newPayloadKeyId(now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `k${stamp}-${randomBytes(2).toString('hex')}`;
}

function keyFileText(ring: PayloadKeyRing): string {
  const keys = Object.fromEntries([...ring.keys].map(([id, key]) => [id, key.toString('base64')]));
  return `${JSON.stringify({ current: ring.currentId, keys }, null, 2)}\n`;
}

/**
 * Creates the key file with one new key unless it exists. Safe when several processes start at once: the
 * file appears whole (written aside, then hard-linked into place, which fails if another got there first).
 */
export async function ensurePayloadKeyFile(path: string): Promise<{ created: boolean }> {
  if (existsSync(path)) {
    readPayloadKeyFile(path);
    return { created: false };
  }
  const id = newPayloadKeyId();
  return {
    created: await writeSecretFile(
      path,
      keyFileText({ currentId: id, keys: new Map([[id, newPayloadKey()]]) }),
    ),
  };
}

/** Adds a new key to the file and makes it current; every earlier key stays to decrypt older payloads. */
export async function rotatePayloadKeyFile(path: string): Promise<{ currentId: string; keyIds: string[] }> {
  const ring = readPayloadKeyFile(path);
  const id = newPayloadKeyId();
  const keys = new Map(ring.keys).set(id, newPayloadKey());
  await replaceSecretFile(path, keyFileText({ currentId: id, keys }));
  return { currentId: id, keyIds: [...keys.keys()] };
}

function parseField<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) =>
    issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ${issue.message}` : issue.message,
  );
  throw new Error(`${where}: ${problems.join('; ')}`);
}
