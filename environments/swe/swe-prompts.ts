// The swe episode's opening messages, in the spirit of mini-swe-agent's swebench.yaml (spec 10.3): a THOUGHT
// section and exactly one command per reply (here: one call of the `bash` tool), the PR description, the
// recommended workflow, and the submission command that ends the episode with the patch.

import type { ChatMessage } from '../../core/chat-messages.js';
import { SUBMIT_COMMAND } from './swe-patch.js';

export const SWE_SYSTEM_PROMPT =
  'You are a helpful assistant that can interact many times with a computer shell to solve programming tasks.\n' +
  'Each reply must make exactly ONE call of the `bash` tool with ONE command (or commands joined with && or ||).\n\n' +
  'Before the call, write a THOUGHT section that explains your reasoning, like this:\n\n' +
  'THOUGHT: Your reasoning and analysis here\n\n' +
  'Replies with no call or with more than one call are rejected.';

export function sweInstanceMessage(problemStatement: string, workdir: string): string {
  return `<pr_description>
Consider the following PR description:
${problemStatement.trim()}
</pr_description>

<instructions>
# Task Instructions

## Overview
You are a software engineer working in a shell on the repository in ${workdir}.
Make changes to non-test files in ${workdir} so that the issue in the PR description is fixed, in a way that
is general and consistent with the codebase.

This is an interactive process: think, run ONE command, read its result, then think and run the next one.

## Boundaries
- MODIFY: regular source files in ${workdir} (the working directory of every command)
- DO NOT MODIFY: tests and configuration files (pyproject.toml, setup.cfg, ...)

## Recommended workflow
1. Find and read the relevant code
2. Write a small script that reproduces the issue
3. Edit the source code to fix it
4. Run your script again to check the fix
5. Try edge cases, and run the existing tests

## Command rules
- Every command runs in a new shell: \`cd\` and variables do not carry over (prefix a command with
  \`cd /path && ...\` where needed)
- Use non-interactive commands only (no vi, nano, less); there is no network
- Commands that run longer than the time limit are stopped

## Useful commands
Create a file:
cat <<'EOF' > newfile.py
print("hello")
EOF

Replace text in a file:
sed -i 's/old_string/new_string/g' filename.py

Show lines 10 to 40 of a file:
nl -ba filename.py | sed -n '10,40p'

## Submission
When your work is done (read, edited, tested) and you cannot make more progress, run exactly this command:

${SUBMIT_COMMAND}

It submits your changes as the final patch; you cannot continue working after it.
</instructions>`;
}

export function sweOpeningMessages(problemStatement: string, workdir: string): ChatMessage[] {
  return [
    { role: 'system', content: SWE_SYSTEM_PROMPT },
    { role: 'user', content: sweInstanceMessage(problemStatement, workdir) },
  ];
}
