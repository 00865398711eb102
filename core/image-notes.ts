// What a text-only reader (the judge, unless it reads images) is shown in place of an image: its media type,
// size and a short digest, e.g. `[image: image/png, 12.3 KB, sha256:ab12cd34]` (docs/scoring.md).

import type { ImageRefPart, StoredImage } from './image-parts.js';

/** The note for an image; its size when its bytes are at hand (null: left out). */
export function imageNote(ref: Pick<ImageRefPart, 'digest' | 'media_type'>, bytes: number | null): string {
  const size = bytes === null ? '' : `, ${formatSize(bytes)}`;
  return `[image: ${ref.media_type}${size}, ${ref.digest.slice(0, 'sha256:'.length + 8)}]`;
}

/** Bytes of a stored image, read from its base64 length (nothing decoded). */
export function storedImageBytes(image: StoredImage): number {
  const padding = image.data.endsWith('==') ? 2 : image.data.endsWith('=') ? 1 : 0;
  return (image.data.length / 4) * 3 - padding;
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
