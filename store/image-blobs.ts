// Images kept by content digest in the sample store: the one place a digest is computed and bytes are
// written, for the gateway's turns and for Track 2's screenshots alike. The bytes go in once under
// `imageStoreKey(digest)` (core/image-parts.ts); records and workflow payloads carry only the digest.

import { createHash } from 'node:crypto';
import { type ImageDigest, imageStoreKey, type StoredImage } from '../core/image-parts.js';
import type { SampleImageRef } from '../core/types.js';
import type { SampleStore } from './sample-store.js';

/** `sha256:<hex>` of an image's bytes. */
export function imageDigestOf(bytes: Uint8Array): ImageDigest {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

const DATA_URL = /^data:(image\/[A-Za-z0-9.+-]+);base64,(.*)$/s;

/** A `data:image/<type>;base64,...` URL as the store keeps it; null for anything else. */
export function storedImageOfDataUrl(url: string): StoredImage | null {
  const match = DATA_URL.exec(url);
  return match?.[1] && match[2] !== undefined ? { mediaType: match[1], data: match[2] } : null;
}

/** Stores a data URL's image under its digest (once) and answers its reference; null when it is none. */
export async function keepDataUrlImage(store: SampleStore, url: string): Promise<SampleImageRef | null> {
  const image = storedImageOfDataUrl(url);
  if (!image) return null;
  const digest = imageDigestOf(Buffer.from(image.data, 'base64'));
  await store.putIfAbsent(imageStoreKey(digest), image);
  return { digest, mediaType: image.mediaType };
}
