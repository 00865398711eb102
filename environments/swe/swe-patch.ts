// Patches: the submission command whose output is the patch (mini-swe-agent's contract), the check that a
// patch is a unified diff before it is applied, and the files a patch touches.

export const SUBMIT_MARKER = 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT';
export const SUBMIT_COMMAND = `echo ${SUBMIT_MARKER} && git add -A && git diff --cached`;

/** The patch a submission command printed (everything after the marker line), or null when it is not one. */
export function submittedPatch(output: string): string | null {
  const lines = output.trimStart().split('\n');
  if (lines[0]?.trim() !== SUBMIT_MARKER) return null;
  return lines.slice(1).join('\n');
}

const FILE_HEADER = /^diff --git a\/\S.* b\/\S/m;
const OLD_NEW_HEADERS = /^--- \S.*\n\+\+\+ \S/m;
const HUNK = /^@@ -\d+(,\d+)? \+\d+(,\d+)? @@/m;
const NON_HUNK_CHANGE =
  /^(new file mode|deleted file mode|rename from|old mode|Binary files|GIT binary patch)/m;

/** Why `patch` cannot be applied as a unified diff, or null when it looks like one. */
export function patchProblem(patch: string): string | null {
  if (patch.trim() === '') return 'the patch is empty (no change was made)';
  if (!FILE_HEADER.test(patch) && !OLD_NEW_HEADERS.test(patch))
    return 'the patch is not a unified diff (no "diff --git" or "---"/"+++" file headers)';
  if (!HUNK.test(patch) && !NON_HUNK_CHANGE.test(patch)) return 'the patch has no hunks ("@@ ... @@")';
  return null;
}

/** The paths a patch changes, from its `diff --git a/X b/Y` headers (Y; X for a deletion). */
export function patchedFiles(patch: string): string[] {
  const files = new Set<string>();
  for (const match of patch.matchAll(/^diff --git a\/(\S+) b\/(\S+)$/gm)) {
    const [, before, after] = match;
    files.add(after === '/dev/null' ? (before as string) : (after as string));
  }
  return [...files];
}
