// A test double for stderr: a PassThrough that records what is written and, when asked, passes for a
// terminal (isTTY, 100 columns), so cli-progress draws its bars into it.
import { PassThrough } from 'node:stream';
import type { ProgressStream } from '../../cli/progress.js';

/** The characters the bars are drawn with (cli-progress's shades_classic preset). */
export const BAR_CHARACTERS = /[█░]/;

/** A stream double that records what is written; `tty` makes it pass for a 100-column terminal. */
export function recordingStreamDouble(tty: boolean): { stream: ProgressStream; text: () => string } {
  const stream = new PassThrough() as PassThrough & { isTTY?: boolean; columns?: number };
  if (tty) {
    stream.isTTY = true;
    stream.columns = 100;
  }
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

/** What a terminal would show last on the bar's line: the text after the last carriage return or cursor move. */
export function lastFrame(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escape sequences are what is removed
  const plain = text.replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b[78]/g, '\r');
  return (
    plain
      .split(/[\r\n]/)
      .filter((line) => line.trim() !== '')
      .at(-1) ?? ''
  );
}
