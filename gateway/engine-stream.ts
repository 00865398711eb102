// Server-sent events from the engine's streaming chat completions, parsed as the bytes arrive so the gateway
// can relay each chunk the moment the engine sends it. Follows the SSE rules the engine and SGLang rely on:
// lines end in \n, \r\n or \r; a blank line ends an event; several `data:` lines join with \n; lines that
// start with `:` are comments.

export interface SseEvent {
  /** The `event:` field, null when absent (SGLang and the reference engine send none). */
  event: string | null;
  data: string;
}

/** The events of an SSE byte stream, in order; a last event without its blank line is still delivered. */
export async function* parseSseEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let event: string | null = null;

  const takeLine = (line: string): SseEvent | null => {
    if (line === '') {
      const complete = data.length > 0 ? { event, data: data.join('\n') } : null;
      data = [];
      event = null;
      return complete;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    return null;
  };

  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end = lineEnd(buffer);
    while (end !== null) {
      const complete = takeLine(buffer.slice(0, end.index));
      buffer = buffer.slice(end.index + end.length);
      if (complete) yield complete;
      end = lineEnd(buffer);
    }
  }
  buffer += decoder.decode();
  // A trailing "\r" may have been waiting for a "\n" that never came.
  for (const line of buffer.split(/\r\n|\r|\n/)) {
    const complete = takeLine(line);
    if (complete) yield complete;
  }
  const last = takeLine('');
  if (last) yield last;
}

/** The first line ending in `text`; a lone "\r" at the very end waits for more (it may start "\r\n"). */
function lineEnd(text: string): { index: number; length: number } | null {
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '\n') return { index: i, length: 1 };
    if (char === '\r') {
      if (i + 1 === text.length) return null;
      return { index: i, length: text[i + 1] === '\n' ? 2 : 1 };
    }
  }
  return null;
}
