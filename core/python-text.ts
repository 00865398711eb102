// Python's `str.strip()` and `len()`, so that text rules copied from the original (hint length > 10,
// stripped hints and teacher prompts) give the same answers here. JavaScript's `trim()` disagrees on a few
// characters (it strips U+FEFF, Python does not; Python strips U+001C-U+001F and U+0085) and `length`
// counts UTF-16 units instead of code points.

const PYTHON_WHITESPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002,
  0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

function isPythonWhitespace(text: string, index: number): boolean {
  return PYTHON_WHITESPACE.has(text.charCodeAt(index));
}

/** `text.strip()` as Python does it (every whitespace character is a single UTF-16 unit). */
export function pythonStrip(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isPythonWhitespace(text, start)) start++;
  while (end > start && isPythonWhitespace(text, end - 1)) end--;
  return text.slice(start, end);
}

/** `len(text)` as Python counts it: code points, not UTF-16 units. */
export function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
