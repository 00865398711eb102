// The payload codec: every payload a project client or worker sends to Temporal (workflow and activity inputs
// and results, signals, queries, memos, failure details) is encrypted with AES-256-GCM before it leaves the
// process, so Temporal's history holds no conversation text, judge reply or hint. It follows the convention
// Temporal's samples use (`binary/encrypted` + `encryption-key-id`), so other codec servers recognise it.
//
// The whole original payload (its metadata included) is serialised and encrypted; the key id is bound to the
// ciphertext as associated data, so relabelling a payload with another key id makes it fail to decrypt.
// Payloads that are not encrypted pass through decode unchanged: runs started from the Temporal UI form or the
// `temporal` CLI send plaintext input, and histories written before encryption was turned on stay readable.

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec, ValueError } from '@temporalio/common';
// A CommonJS module whose named exports Node's ESM loader cannot see: take the default export.
import proto from '@temporalio/proto';
import type { PayloadKeyRing } from './payload-keys.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const METADATA_KEY_ID = 'encryption-key-id';

const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const ProtoPayload = proto.temporal.api.common.v1.Payload;

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly currentKey: Buffer;
  private readonly currentIdBytes: Buffer;

  constructor(private readonly ring: PayloadKeyRing) {
    const key = ring.keys.get(ring.currentId);
    if (!key) throw new ValueError(`payload key "${ring.currentId}" is not in the key ring`);
    this.currentKey = key;
    this.currentIdBytes = Buffer.from(ring.currentId, 'utf8');
  }

  /** The id new payloads are encrypted under. */
  get keyId(): string {
    return this.ring.currentId;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decrypt(payload));
  }

  private encrypt(payload: Payload): Payload {
    const plain = ProtoPayload.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(CIPHER, this.currentKey, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(this.currentIdBytes);
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: {
        [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
        [METADATA_KEY_ID]: this.currentIdBytes,
      },
      data: sealed,
    };
  }

  private decrypt(payload: Payload): Payload {
    if (!isEncrypted(payload)) return payload;
    const idBytes = payload.metadata?.[METADATA_KEY_ID];
    if (!idBytes) throw new ValueError('an encrypted payload carries no encryption-key-id');
    const keyId = Buffer.from(idBytes).toString('utf8');
    const key = this.ring.keys.get(keyId);
    if (!key)
      throw new ValueError(
        `a payload is encrypted with key "${keyId}", which is not in this key ring (${[...this.ring.keys.keys()].join(', ')}); add it to payloads.keys or the key file`,
      );
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) throw new ValueError('an encrypted payload is too short');
    const decipher = createDecipheriv(CIPHER, key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(idBytes);
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw new ValueError(
        `a payload encrypted with key "${keyId}" failed authentication (wrong key or altered)`,
      );
    }
    const decoded = ProtoPayload.decode(plain);
    return { metadata: decoded.metadata, data: decoded.data };
  }
}

export function isEncrypted(payload: Payload): boolean {
  const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
  return encoding !== undefined && Buffer.from(encoding).toString('utf8') === ENCRYPTED_ENCODING;
}
