// OpenAI chat messages as the gateway receives them, and the two text rules the original applies to them
// (spec 3.6 step 2): list content is flattened to its text parts joined by one space, and the `developer` role
// is rendered as `system`. Images are kept apart from the text, as digest refs (core/image-parts.ts).

export interface ChatContentPart {
  type: string;
  text?: string;
  [field: string]: unknown;
}

export interface ChatMessage {
  role: string;
  content?: string | ChatContentPart[] | null;
  [field: string]: unknown;
}

/** The role the judge is told the next state has. */
export type NextStateRole = 'user' | 'tool';

/** The message that followed a turn, reduced to what the judge sees (spec 3.7). */
export interface NextState {
  role: NextStateRole;
  text: string;
}

/** The text shown in place of an image part (`image_ref`) where a reader gets text only (a judge's note). */
export type ImageText = (part: ChatContentPart) => string;

/**
 * Text of a message's content: strings as they are, text parts joined by a space, nothing for null. Image
 * parts are left out, or with `imageText` written in their place.
 */
export function flattenContent(content: unknown, imageText?: ImageText): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const texts: string[] = [];
    for (const part of content) {
      if (isTextPart(part)) texts.push(typeof part.text === 'string' ? part.text : '');
      else if (imageText && isImageRef(part)) texts.push(imageText(part));
    }
    return texts.join(' ');
  }
  if (content === null || content === undefined) return '';
  return typeof content === 'object' ? JSON.stringify(content) : String(content);
}

function isTextPart(part: unknown): part is ChatContentPart {
  return typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text';
}

/**
 * Copies of the messages as the chat template should see them: `developer` → `system`, content flattened; a
 * list that holds `image_ref` parts (core/image-parts.ts) stays a list of its text and image parts, in order, so
 * a turn keeps where its images were. Text-only content is flattened as it always was: the records, sample ids
 * and prefix hashes of text turns do not change.
 */
export function normaliseMessagesForTemplate(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map((message) => {
    const copy: ChatMessage = { ...message };
    if (copy.role === 'developer') copy.role = 'system';
    if (Array.isArray(copy.content) && copy.content.some(isImageRef)) {
      copy.content = copy.content
        .filter((part) => isTextPart(part) || isImageRef(part))
        .map((part) =>
          part.type === 'image_ref'
            ? part
            : { type: 'text', text: typeof part.text === 'string' ? part.text : '' },
        );
    } else if (copy.content !== null && copy.content !== undefined && typeof copy.content !== 'string') {
      copy.content = flattenContent(copy.content);
    }
    return copy;
  });
}

// The shape of core/image-parts.ts's `ImageRefPart` (that module builds on this one).
function isImageRef(part: unknown): part is ChatContentPart {
  return typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'image_ref';
}

/** The next state of a turn from the last message of the following main request: tool results stay `tool`. */
export function nextStateOf(message: ChatMessage, imageText?: ImageText): NextState {
  return {
    role: message.role === 'tool' ? 'tool' : 'user',
    text: flattenContent(message.content, imageText),
  };
}

/**
 * The next state of a turn, from the following main request: every message after the turn's reply, not only the
 * last. The reply is found as the following request's assistant message number `assistantsBefore + 1` (the
 * turn's own prompt had `assistantsBefore`), not by position: a client may add its own messages to each call and
 * drop them from the history it sends next (OpenClaw appends a user-role runtime-context message to every call,
 * after the user's reply or the tool's result). Its role is the first message's (`tool` when a tool answered).
 */
export function nextStateAfter(
  messages: readonly ChatMessage[],
  assistantsBefore: number,
  imageText?: ImageText,
): NextState | null {
  const after = nextStateMessages(messages, assistantsBefore);
  const first = after[0];
  if (!first) return null;
  return {
    role: nextStateOf(first).role,
    text: after.map((message) => flattenContent(message.content, imageText)).join('\n\n'),
  };
}

/** The messages `nextStateAfter` reads: every one after the reply number `assistantsBefore + 1` (none: none). */
export function nextStateMessages(messages: readonly ChatMessage[], assistantsBefore: number): ChatMessage[] {
  let seen = 0;
  const reply = messages.findIndex((message) => message.role === 'assistant' && seen++ === assistantsBefore);
  return reply < 0 ? [] : messages.slice(reply + 1);
}
