// The AES-GCM payload codec and its key ring: round trips, rotation (encrypt with the newest, decrypt with
// any), tampering, plaintext pass-through, and the key files `dev`, `keys init` and `keys rotate` write.

import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure, defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  decodeOptionalFailureToOptionalError,
  encodeErrorToFailure,
} from '@temporalio/common/lib/internal-non-workflow/codec-helpers.js';
import { loadDataConverter } from '@temporalio/common/lib/internal-non-workflow/data-converter-helpers.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type OpenClawConfigInput } from '../../core/config.js';
import { AesGcmPayloadCodec, ENCRYPTED_ENCODING, isEncrypted } from '../../security/payload-codec.js';
import { PayloadEncryptionPlugin } from '../../security/payload-encryption.js';
import {
  ensurePayloadKeyFile,
  keyRingFromEntries,
  newPayloadKey,
  type PayloadKeyRing,
  readPayloadKeyFile,
  resolvePayloadKeys,
  rotatePayloadKeyFile,
} from '../../security/payload-keys.js';

const SECRET = 'my private conversation about a rash on my arm';

function ring(current: string, ...ids: string[]): PayloadKeyRing {
  return { currentId: current, keys: new Map(ids.map((id) => [id, KEYS[id] as Buffer])) };
}
const KEYS: Record<string, Buffer> = { old: newPayloadKey(), new: newPayloadKey() };

const plain = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const text = (payload: Payload) => Buffer.from(payload.data ?? new Uint8Array()).toString('latin1');

describe('AesGcmPayloadCodec', () => {
  it('encrypts the whole payload and gives it back whole', async () => {
    const codec = new AesGcmPayloadCodec(ring('old', 'old'));
    const original = [plain({ message: SECRET }), plain(null), plain('x'.repeat(100_000))];
    const sealed = await codec.encode(original);
    expect(sealed.every(isEncrypted)).toBe(true);
    for (const payload of sealed) {
      expect(Buffer.from(payload.metadata?.encoding ?? []).toString()).toBe(ENCRYPTED_ENCODING);
      expect(Buffer.from(payload.metadata?.['encryption-key-id'] ?? []).toString()).toBe('old');
      expect(text(payload)).not.toContain('rash');
      expect(text(payload)).not.toContain('json/plain');
    }
    const opened = await codec.decode(sealed);
    expect(opened.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([
      { message: SECRET },
      null,
      'x'.repeat(100_000),
    ]);
    // A fresh IV every time: the same value never encrypts to the same bytes.
    const [again] = await codec.encode([plain({ message: SECRET })]);
    expect(text(again as Payload)).not.toBe(text(sealed[0] as Payload));
  });

  it('rotates: the newest key encrypts, any key in the ring decrypts, a ring without the key refuses', async () => {
    const before = new AesGcmPayloadCodec(ring('old', 'old'));
    const after = new AesGcmPayloadCodec(ring('new', 'old', 'new'));
    const [written] = await before.encode([plain(SECRET)]);
    const [rewritten] = await after.encode([plain(SECRET)]);
    expect(Buffer.from(rewritten?.metadata?.['encryption-key-id'] ?? []).toString()).toBe('new');
    const decoded = await after.decode([written as Payload, rewritten as Payload]);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([SECRET, SECRET]);
    const onlyNew = new AesGcmPayloadCodec(ring('new', 'new'));
    await expect(onlyNew.decode([written as Payload])).rejects.toThrow(
      /key "old", which is not in this key ring/,
    );
  });

  it('refuses altered ciphertext and a payload relabelled with another key id', async () => {
    const codec = new AesGcmPayloadCodec(ring('new', 'old', 'new'));
    const [sealed] = await codec.encode([plain(SECRET)]);
    const data = Buffer.from(sealed?.data ?? []);
    data[20] = (data[20] ?? 0) ^ 1;
    await expect(codec.decode([{ ...sealed, data }])).rejects.toThrow(/failed authentication/);
    const relabelled = {
      ...sealed,
      metadata: { ...sealed?.metadata, 'encryption-key-id': Buffer.from('old') },
    };
    await expect(codec.decode([relabelled])).rejects.toThrow(/failed authentication/);
  });

  it('passes plaintext through decode (runs started from the UI form, older histories)', async () => {
    const codec = new AesGcmPayloadCodec(ring('old', 'old'));
    const [decoded] = await codec.decode([plain({ runId: 'default' })]);
    expect(defaultPayloadConverter.fromPayload(decoded as Payload)).toEqual({ runId: 'default' });
  });
});

describe('the encryption plugin', () => {
  it('gives clients and workers the codec and a failure converter that encrypts failure messages', async () => {
    const plugin = new PayloadEncryptionPlugin(ring('old', 'old'));
    const clientOptions = plugin.configureClient({});
    const workerOptions = plugin.configureWorker({ taskQueue: 'q' });
    expect(clientOptions.dataConverter?.payloadCodecs).toEqual([plugin.codec]);
    expect(workerOptions.dataConverter).toEqual(clientOptions.dataConverter);
    // Applied twice (a connection's plugin and a client's), the codec is still there once.
    expect(plugin.configureClient(clientOptions).dataConverter?.payloadCodecs).toEqual([plugin.codec]);

    const converter = loadDataConverter(clientOptions.dataConverter);
    const error = ApplicationFailure.create({
      message: `judge said: ${SECRET}`,
      details: [{ quote: SECRET }],
    });
    const failure = await encodeErrorToFailure(converter, error);
    expect(JSON.stringify(failure)).not.toContain('rash');
    expect(failure.message).toBe('Encoded failure');
    for (const payload of [
      failure.encodedAttributes,
      ...(failure.applicationFailureInfo?.details?.payloads ?? []),
    ])
      expect(isEncrypted(payload as Payload)).toBe(true);
    const back = (await decodeOptionalFailureToOptionalError(converter, failure)) as ApplicationFailure;
    expect(back.message).toBe(`judge said: ${SECRET}`);
    expect(back.details).toEqual([{ quote: SECRET }]);
  });
});

describe('payload key ring from the configuration', () => {
  const entry = (id: string, key = newPayloadKey()) => `${id}:${key.toString('base64')}`;

  it('takes `<id>:<base64>` entries and the id that encrypts', () => {
    expect(keyRingFromEntries([entry('a')], '').currentId).toBe('a');
    const two = keyRingFromEntries([entry('a'), entry('b')], 'b');
    expect(two.currentId).toBe('b');
    expect([...two.keys.keys()]).toEqual(['a', 'b']);
  });

  it('names what is wrong', () => {
    expect(() => keyRingFromEntries([entry('a'), entry('b')], '')).toThrow(/several payload keys/);
    expect(() => keyRingFromEntries([entry('a')], 'c')).toThrow(/"c" is not one of payloads.keys/);
    expect(() => keyRingFromEntries([entry('a'), entry('a')], 'a')).toThrow(/listed twice/);
    expect(() => keyRingFromEntries(['a:c2hvcnQ='], '')).toThrow(/base64 of 32 random bytes/);
    expect(() => keyRingFromEntries(['no-colon'], '')).toThrow(/<id>:<base64 key>/);
    expect(() => keyRingFromEntries([entry('bad/id')], '')).toThrow(/a key id is 1-64 letters/);
  });
});

describe('payload key files and resolution', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payload-keys-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const config = (payloads: OpenClawConfigInput['payloads'] = {}, dataDir = dir) => {
    const loaded = loadConfig({}, { dataDir, payloads });
    if (!loaded.ok) throw new Error(loaded.error);
    return loaded.config;
  };

  it('creates the key file once (owner-only), even when several processes start together', async () => {
    const file = join(dir, 'race', 'keys', 'payload-keys.json');
    const results = await Promise.all(Array.from({ length: 8 }, () => ensurePayloadKeyFile(file)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'race', 'keys'))).mode & 0o777).toBe(0o700);
    const ring = readPayloadKeyFile(file);
    expect(ring.keys.size).toBe(1);
    expect(await ensurePayloadKeyFile(file)).toEqual({ created: false });
    expect(readPayloadKeyFile(file)).toEqual(ring);
  });

  it('rotates in place: a new current key, the old ones kept', async () => {
    const file = join(dir, 'rotate.json');
    await ensurePayloadKeyFile(file);
    const first = readPayloadKeyFile(file);
    const { currentId, keyIds } = await rotatePayloadKeyFile(file);
    const second = readPayloadKeyFile(file);
    expect(second.currentId).toBe(currentId);
    expect(currentId).not.toBe(first.currentId);
    expect(keyIds).toEqual([first.currentId, currentId]);
    const [old] = await new AesGcmPayloadCodec(first).encode([plain(SECRET)]);
    const [decoded] = await new AesGcmPayloadCodec(second).decode([old as Payload]);
    expect(defaultPayloadConverter.fromPayload(decoded as Payload)).toBe(SECRET);
  });

  it('rejects a malformed key file by name', async () => {
    const file = join(dir, 'bad.json');
    await writeFile(file, JSON.stringify({ current: 'x', keys: { y: newPayloadKey().toString('base64') } }));
    expect(() => readPayloadKeyFile(file)).toThrow(
      /bad.json: current: the current key id is not one of the keys/,
    );
    await writeFile(file, '{');
    expect(() => readPayloadKeyFile(file)).toThrow(/bad.json/);
  });

  it('resolves: configured keys, else the data folder file; required without any is an error; off is off', async () => {
    const empty = await mkdtemp(join(dir, 'empty-'));
    expect(resolvePayloadKeys(config({}, empty)).ring).toBeNull();
    expect(() => resolvePayloadKeys(config({ encryption: 'required' }, empty))).toThrow(
      /payload encryption is required .*`openclaw-rl keys init`/,
    );
    await ensurePayloadKeyFile(join(empty, 'keys', 'payload-keys.json'));
    const fromFile = resolvePayloadKeys(config({ encryption: 'required' }, empty));
    expect(fromFile.source).toBe(join(empty, 'keys', 'payload-keys.json'));
    expect(fromFile.ring?.keys.size).toBe(1);
    const listed = resolvePayloadKeys(config({ keys: [`k:${newPayloadKey().toString('base64')}`] }, empty));
    expect(listed).toMatchObject({ source: 'OPENCLAW_PAYLOAD_KEYS', ring: { currentId: 'k' } });
    expect(resolvePayloadKeys(config({ encryption: 'off' }, empty)).ring).toBeNull();
    expect(JSON.parse(await readFile(join(empty, 'keys', 'payload-keys.json'), 'utf8'))).toHaveProperty(
      'current',
    );
  });
});
