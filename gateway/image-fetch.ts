// Fetches an image from a host the operator allows: with a timeout, no redirects (a redirect could lead to a
// host nobody allowed), the content-type read, and the body read no further than the size limit.

export interface ImageFetchOptions {
  maxBytes: number;
  timeoutMs: number;
  /** The client's: the fetch stops when it leaves. */
  signal: AbortSignal;
}

export type FetchedImage =
  | { ok: true; mediaType: string; bytes: Uint8Array }
  | { ok: false; problem: string };

export async function fetchAllowedImage(url: URL, options: ImageFetchOptions): Promise<FetchedImage> {
  const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)]);
  let response: Response;
  try {
    response = await fetch(url, { signal, redirect: 'manual', headers: { accept: 'image/*' } });
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError';
    return {
      ok: false,
      problem: timedOut
        ? `the image at ${url.host} did not arrive within ${options.timeoutMs} ms`
        : `the image could not be fetched from ${url.host}: ${(error as Error).message}`,
    };
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined);
    return { ok: false, problem: `fetching the image from ${url.host} answered ${response.status}` };
  }
  const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > options.maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    return tooLarge(declared, options.maxBytes);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += chunk.length;
      if (size > options.maxBytes) {
        await response.body?.cancel().catch(() => undefined);
        return tooLarge(size, options.maxBytes);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    return {
      ok: false,
      problem: `the image from ${url.host} could not be read: ${(error as Error).message}`,
    };
  }
  return { ok: true, mediaType, bytes: Buffer.concat(chunks) };
}

function tooLarge(size: number, maxBytes: number): FetchedImage {
  return { ok: false, problem: `the image is over the limit of ${maxBytes} bytes (at least ${size})` };
}
