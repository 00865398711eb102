// Cutting long text in the middle: the head and the tail stay, with a note of how much was left out between
// them (tool output shown to a policy, texts shown to a judge).

/** `text` whole when it fits `maxChars`, else its head and tail around `[... N characters cut ...]`. */
export function clipMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.ceil(maxChars / 2);
  const tail = maxChars - head;
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n[... ${cut} characters cut ...]\n${text.slice(text.length - tail)}`;
}
