// Images in chat messages, and the one form they are kept in. A client sends OpenAI `image_url` parts (a data
// URL, or an http(s) URL the gateway fetches); the engine is always sent a data URL, so the bytes it saw are the
// bytes kept. A recorded turn keeps an image as an `image_ref` part naming its content digest; the bytes are
// stored once under `imageStoreKey(digest)`, never inline in records or workflow payloads. Whoever needs the
// pixels again (the teacher, a vision judge, a trainer) turns refs back into data URLs with `withImageData`.

import type { ChatContentPart, ChatMessage } from './chat-messages.js';

/** `sha256:<64 hex>`: the digest of an image's bytes. */
export type ImageDigest = `sha256:${string}`;

/** How a recorded turn keeps an image part: its digest and media type, no bytes. */
export interface ImageRefPart extends ChatContentPart {
  type: 'image_ref';
  digest: ImageDigest;
  media_type: string;
}

/** An image's bytes as the store keeps them (base64 in JSON: the sample store holds JSON values). */
export interface StoredImage {
  mediaType: string;
  /** Base64 of the image's bytes. */
  data: string;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

export function isImageDigest(value: unknown): value is ImageDigest {
  return typeof value === 'string' && DIGEST.test(value);
}

export function isImageRefPart(part: unknown): part is ImageRefPart {
  if (typeof part !== 'object' || part === null) return false;
  const p = part as Record<string, unknown>;
  return p.type === 'image_ref' && isImageDigest(p.digest) && typeof p.media_type === 'string';
}

/** Sample-store key of an image's bytes. */
export function imageStoreKey(digest: ImageDigest): string {
  return `images/${digest.slice('sha256:'.length)}`;
}

/** The image refs of the messages, in prompt order (the order a chat template renders them). */
export function imageRefsOf(messages: readonly ChatMessage[]): ImageRefPart[] {
  const refs: ImageRefPart[] = [];
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content) if (isImageRefPart(part)) refs.push(part);
  }
  return refs;
}

/** `data:<media type>;base64,<data>` */
export function dataUrlOf(image: StoredImage): string {
  return `data:${image.mediaType};base64,${image.data}`;
}

/**
 * The messages with every `image_ref` part turned back into the `image_url` part the engine was sent, the
 * bytes read with `load` (once per digest).
 */
export async function withImageData(
  messages: readonly ChatMessage[],
  load: (digest: ImageDigest) => Promise<StoredImage>,
): Promise<ChatMessage[]> {
  const loaded = new Map<ImageDigest, Promise<StoredImage>>();
  const loadOnce = (digest: ImageDigest) => {
    let image = loaded.get(digest);
    if (image === undefined) {
      image = load(digest);
      loaded.set(digest, image);
    }
    return image;
  };
  return Promise.all(
    messages.map(async (message) => {
      if (!Array.isArray(message.content) || !message.content.some(isImageRefPart)) return message;
      const content = await Promise.all(
        message.content.map(async (part) =>
          isImageRefPart(part)
            ? { type: 'image_url', image_url: { url: dataUrlOf(await loadOnce(part.digest)) } }
            : part,
        ),
      );
      return { ...message, content };
    }),
  );
}
