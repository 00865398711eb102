// Encryption for every client and worker the project creates: a plugin on the Temporal connection, which the
// SDK hands on to each Client and Worker made with that connection, adds the AES-GCM codec and the failure
// converter that moves failure messages into encrypted attributes. Workers need no code of their own for it.

import { fileURLToPath } from 'node:url';
import type { ClientOptions, ClientPlugin, ConnectionPlugin } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type {
  NativeConnectionPlugin,
  ReplayWorkerOptions,
  WorkerOptions,
  WorkerPlugin,
} from '@temporalio/worker';
import type { OpenClawConfig } from '../core/config.js';
import { AesGcmPayloadCodec } from './payload-codec.js';
import { type PayloadKeyRing, resolvePayloadKeys } from './payload-keys.js';

export const FAILURE_CONVERTER_PATH = fileURLToPath(new URL('./failure-converter.cjs', import.meta.url));

export class PayloadEncryptionPlugin
  implements ClientPlugin, ConnectionPlugin, NativeConnectionPlugin, WorkerPlugin
{
  readonly name = 'openclaw-rl.payload-encryption';
  readonly codec: AesGcmPayloadCodec;

  constructor(ring: PayloadKeyRing) {
    this.codec = new AesGcmPayloadCodec(ring);
  }

  configureClient(options: Omit<ClientOptions, 'plugins'>): Omit<ClientOptions, 'plugins'> {
    return { ...options, dataConverter: this.encrypting(options.dataConverter) };
  }

  configureWorker(options: WorkerOptions): WorkerOptions {
    return { ...options, dataConverter: this.encrypting(options.dataConverter) };
  }

  /** Replaying a history recorded with encryption needs the keys too (plaintext ones pass through). */
  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    return { ...options, dataConverter: this.encrypting(options.dataConverter) };
  }

  private encrypting(dataConverter: DataConverter | undefined): DataConverter {
    const codecs = dataConverter?.payloadCodecs ?? [];
    return {
      ...dataConverter,
      // Last, so it runs after any other codec when encoding (compression before encryption).
      payloadCodecs: codecs.includes(this.codec) ? codecs : [...codecs, this.codec],
      failureConverterPath: dataConverter?.failureConverterPath ?? FAILURE_CONVERTER_PATH,
    };
  }
}

export interface PayloadEncryption {
  plugin: PayloadEncryptionPlugin | null;
  /** One line for start-up logs: which key encrypts and where the ring came from, or why nothing does. */
  description: string;
}

/** The encryption the configuration asks for (none when no key is configured and it is not required). */
export function payloadEncryptionFromConfig(config: OpenClawConfig): PayloadEncryption {
  const { ring, source } = resolvePayloadKeys(config);
  if (!ring) return { plugin: null, description: `payloads are NOT encrypted: ${source}` };
  return {
    plugin: new PayloadEncryptionPlugin(ring),
    description: `payloads encrypted (AES-256-GCM, key ${ring.currentId} of ${ring.keys.size}, from ${source})`,
  };
}
