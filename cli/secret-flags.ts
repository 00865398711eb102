// Keys given to the CLI: from a file (`--<name>-file`) or an environment variable, never inline. A command
// line is readable by every user of the machine (`ps`, /proc/<pid>/cmdline) and lands in shell history; a
// process's environment and a 0600 file are its owner's only.

import { readFileSync } from 'node:fs';
import { Option } from 'commander';

/** `--<flag>-file <file>`: the key is the file's first line. */
export function secretFileOption(flag: string, envName: string, what: string): Option {
  return new Option(
    `--${flag}-file <file>`,
    `file whose first line is the ${what} (or ${envName}; never on the command line, where ps shows it)`,
  );
}

/** The old inline `--<flag> <key>`, kept only to refuse it with the alternatives (hidden from help). */
export function refusedInlineSecretOption(flag: string): Option {
  return new Option(`--${flag} <key>`).hideHelp();
}

/**
 * The key from `--<flag>-file`, or undefined when neither form is given (the variable then applies); an inline
 * `--<flag>` is refused, without repeating the key.
 */
export function secretFromFlags(
  flag: string,
  envName: string,
  given: { inline?: string | undefined; file?: string | undefined },
): string | undefined {
  if (given.inline !== undefined)
    throw new Error(
      `--${flag} is not accepted: a key on the command line is readable by every user of this machine (ps, /proc/<pid>/cmdline); set ${envName} or pass --${flag}-file <file> (its first line)`,
    );
  if (given.file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(given.file, 'utf8');
  } catch (error) {
    throw new Error(`--${flag}-file ${given.file}: ${(error as Error).message}`);
  }
  const key = text.split('\n')[0]?.trim() ?? '';
  if (!key) throw new Error(`--${flag}-file ${given.file} is empty`);
  return key;
}
