// What the policy sees after a command, in mini-swe-agent's format (spec 10.3): the exit status in
// <returncode>, the output (stdout and stderr interleaved) in <output>; output over the limit becomes a
// warning, its first and last halves and the number of characters left out; then how many turns remain.

export interface CommandOutcome {
  /** -1 when the command timed out or no status could be read. */
  returncode: number;
  output: string;
}

export const LONG_OUTPUT_WARNING =
  'The output of your last command was too long.\n' +
  'Please try a different command that produces less output.\n' +
  "If you're looking at a file you can try use head, tail or sed to view a smaller number of lines selectively.\n" +
  "If you're using grep or find and it produced too much output, you can use a more selective search pattern.\n" +
  'If you really need to see something from the full command output, you can redirect output to a file and then search in that file.';

export function formatObservation(
  outcome: CommandOutcome,
  maxOutputChars: number,
  turnsLeft: number | null,
): string {
  const { output } = outcome;
  let text = `<returncode>${outcome.returncode}</returncode>\n`;
  if (output.length <= maxOutputChars) {
    text += `<output>\n${output}</output>`;
  } else {
    const half = Math.floor(maxOutputChars / 2);
    text +=
      `<warning>\n${LONG_OUTPUT_WARNING}\n</warning>\n` +
      `<output_head>\n${output.slice(0, half)}\n</output_head>\n` +
      `<elided_chars>\n${output.length - 2 * half} characters elided\n</elided_chars>\n` +
      `<output_tail>\n${output.slice(-half)}\n</output_tail>`;
  }
  if (turnsLeft !== null) text += `\n${turnsReminder(turnsLeft)}`;
  return text;
}

export function turnsReminder(turnsLeft: number): string {
  if (turnsLeft <= 0)
    return 'REMINDER: You have no turns left. Submit your work now with the submission command.';
  return `REMINDER: You have ${turnsLeft} turn${turnsLeft === 1 ? '' : 's'} left to complete the task.`;
}
