// Images in a chat request, checked and taken in at the edge. Each OpenAI `image_url` part (a data URL, or an
// http(s) URL from a host the operator allows, fetched here) becomes: for the engine, a data URL of exactly the
// bytes checked; for identity, idempotency and the record, an `image_ref` naming their digest
// (core/image-parts.ts). So the same image reaches the same digest however it was sent, the bytes are stored
// once, and no hash, record or workflow payload carries them. A request without images is left as it is.

import { z } from 'zod';
import type { ChatContentPart, ChatMessage } from '../core/chat-messages.js';
import { IMAGE_MEDIA_TYPES, isImageMediaType, sniffImageMediaType } from '../core/image-media-types.js';
import { dataUrlOf, type ImageDigest, type ImageRefPart, type StoredImage } from '../core/image-parts.js';
import { imageDigestOf } from '../store/image-blobs.js';
import { fieldPath } from './chat-request-schema.js';
import { fetchAllowedImage } from './image-fetch.js';
import { invalidRequest } from './openai-errors.js';

export interface ImageLimits {
  /** Largest decoded image, in bytes. */
  maxBytes: number;
  /** Most images in one request. */
  maxPerRequest: number;
  /** Hosts (`host` or `host:port`) whose http(s) URLs are fetched; none: data URLs only. */
  allowedHosts: readonly string[];
  fetchTimeoutMs: number;
}

export const DEFAULT_IMAGE_LIMITS: ImageLimits = {
  maxBytes: 10 * 1024 * 1024,
  maxPerRequest: 16,
  allowedHosts: [],
  fetchTimeoutMs: 10_000,
};

export interface TakenImages<M extends ChatMessage = ChatMessage> {
  /** The messages the engine is sent: every image a data-URL `image_url` part. */
  engineMessages: M[];
  /** The messages with every image an `image_ref` part: what identity, idempotency and the record are made of. */
  refMessages: M[];
  /** The bytes of each image, once per digest: stored before the turn's record. */
  images: Map<ImageDigest, StoredImage>;
}

// `image_url` is OpenAI's object; some clients send the URL as a bare string.
const imageUrlObject = z.looseObject(
  {
    url: z.string().min(1, 'url must be a data URL or an http(s) URL'),
    detail: z.enum(['auto', 'low', 'high']).optional(),
  },
  { error: 'image_url must be an object with a url, or a URL' },
);

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/s;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The request's images checked and taken in, or a 400 naming the first bad one's field
 * (`messages[1].content[0].image_url.url`). `signal`: the client's (a fetch stops when it leaves).
 */
export async function takeImages<M extends ChatMessage>(
  messages: readonly M[],
  limits: ImageLimits,
  signal: AbortSignal,
): Promise<TakenImages<M>> {
  const images = new Map<ImageDigest, StoredImage>();
  if (!messages.some(hasImageOrRef))
    return { engineMessages: [...messages], refMessages: [...messages], images };
  let count = 0;
  const engineMessages: M[] = [];
  const refMessages: M[] = [];
  for (const [m, message] of messages.entries()) {
    if (!Array.isArray(message.content) || !message.content.some(isImageOrRef)) {
      engineMessages.push(message);
      refMessages.push(message);
      continue;
    }
    const engineParts: ChatContentPart[] = [];
    const refParts: ChatContentPart[] = [];
    for (const [p, part] of message.content.entries()) {
      const at = ['messages', m, 'content', p];
      if (part.type === 'image_ref')
        throw invalidRequest(
          `${fieldPath([...at, 'type'])}: image_ref parts are the gateway's own; send an image_url`,
          fieldPath([...at, 'type']),
        );
      if (part.type !== 'image_url') {
        engineParts.push(part);
        refParts.push(part);
        continue;
      }
      const bare = typeof part.image_url === 'string' && part.image_url !== '';
      const parsed = bare ? null : imageUrlObject.safeParse(part.image_url);
      if (parsed && !parsed.success) {
        const issue = parsed.error.issues[0];
        const param = fieldPath([...at, 'image_url', ...(issue?.path ?? [])]);
        throw invalidRequest(`${param}: ${issue?.message ?? 'invalid image part'}`, param);
      }
      const url = parsed?.data?.url ?? (part.image_url as string);
      const detail = parsed?.data?.detail;
      const param = fieldPath([...at, 'image_url', ...(bare ? [] : ['url'])]);
      if (++count > limits.maxPerRequest)
        throw invalidRequest(
          `${param}: a request may carry at most ${limits.maxPerRequest} images`,
          param,
          'too_many_images',
        );
      const image = await imageOf(url, limits, param, signal);
      const digest = digestOf(image.bytes);
      const stored: StoredImage = {
        mediaType: image.mediaType,
        data: Buffer.from(image.bytes).toString('base64'),
      };
      images.set(digest, stored);
      engineParts.push({
        type: 'image_url',
        image_url: { url: dataUrlOf(stored), ...(detail !== undefined && { detail }) },
      });
      const ref: ImageRefPart = { type: 'image_ref', digest, media_type: image.mediaType };
      refParts.push(ref);
    }
    engineMessages.push({ ...message, content: engineParts });
    refMessages.push({ ...message, content: refParts });
  }
  return { engineMessages, refMessages, images };
}

/** `sha256:<hex>` of an image's bytes (store/image-blobs.ts). */
export const digestOf: (bytes: Uint8Array) => ImageDigest = imageDigestOf;

interface ImageBytes {
  mediaType: string;
  bytes: Uint8Array;
}

async function imageOf(
  url: string,
  limits: ImageLimits,
  param: string,
  signal: AbortSignal,
): Promise<ImageBytes> {
  if (url.startsWith('data:')) return dataUrlImage(url, limits, param);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidRequest(`${param}: not a data URL or an http(s) URL`, param);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw invalidRequest(`${param}: not a data URL or an http(s) URL`, param);
  const allowed = limits.allowedHosts.some(
    (host) =>
      host.toLowerCase() === parsed.host.toLowerCase() ||
      host.toLowerCase() === parsed.hostname.toLowerCase(),
  );
  if (!allowed)
    throw invalidRequest(
      `${param}: image URLs from host ${parsed.host} are not allowed; send a data URL or allow the host`,
      param,
      'image_host_not_allowed',
    );
  const fetched = await fetchAllowedImage(parsed, {
    maxBytes: limits.maxBytes,
    timeoutMs: limits.fetchTimeoutMs,
    signal,
  });
  if (!fetched.ok) throw invalidRequest(`${param}: ${fetched.problem}`, param, 'image_unavailable');
  return checkedImage(fetched.mediaType, fetched.bytes, limits, param);
}

function dataUrlImage(url: string, limits: ImageLimits, param: string): ImageBytes {
  const match = DATA_URL.exec(url);
  if (!match) throw invalidRequest(`${param}: malformed data URL`, param);
  const mediaType = (match[1] ?? '').trim().toLowerCase();
  const base64 = (match[2] ?? '').split(';').some((p) => p.trim().toLowerCase() === 'base64');
  const data = match[3] ?? '';
  if (!base64) throw invalidRequest(`${param}: a data URL must be base64 (data:<type>;base64,...)`, param);
  if (!isImageMediaType(mediaType)) throw unsupportedType(mediaType, param);
  if (data.length % 4 !== 0 || !BASE64.test(data))
    throw invalidRequest(`${param}: the data URL's base64 is not valid`, param);
  // Checked before decoding, so an oversized image costs no allocation.
  const size = (data.length / 4) * 3 - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
  if (size > limits.maxBytes) throw tooLarge(size, limits, param);
  return checkedImage(mediaType, Buffer.from(data, 'base64'), limits, param);
}

function checkedImage(mediaType: string, bytes: Uint8Array, limits: ImageLimits, param: string): ImageBytes {
  if (!isImageMediaType(mediaType)) throw unsupportedType(mediaType, param);
  if (bytes.length > limits.maxBytes) throw tooLarge(bytes.length, limits, param);
  if (bytes.length === 0) throw invalidRequest(`${param}: the image is empty`, param);
  const sniffed = sniffImageMediaType(bytes);
  if (sniffed !== mediaType)
    throw invalidRequest(
      `${param}: the bytes are ${sniffed ?? 'not an image of an accepted type'}, not ${mediaType}`,
      param,
      'invalid_image',
    );
  return { mediaType, bytes };
}

function unsupportedType(mediaType: string, param: string) {
  return invalidRequest(
    `${param}: image type ${mediaType || '(none)'} is not accepted; send one of ${IMAGE_MEDIA_TYPES.join(', ')}`,
    param,
    'unsupported_image_type',
  );
}

function tooLarge(size: number, limits: ImageLimits, param: string) {
  return invalidRequest(
    `${param}: the image is ${size} bytes, over the limit of ${limits.maxBytes}`,
    param,
    'image_too_large',
  );
}

function isImageOrRef(part: unknown): boolean {
  const type = typeof part === 'object' && part !== null ? (part as { type?: unknown }).type : undefined;
  return type === 'image_url' || type === 'image_ref';
}

function hasImageOrRef(message: ChatMessage): boolean {
  return Array.isArray(message.content) && message.content.some(isImageOrRef);
}
