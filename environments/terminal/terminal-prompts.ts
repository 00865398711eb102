// The terminal episode's opening messages: a system prompt in this project's words with the original's
// demands (spec 10.1: an engineer working in a Linux container, short reasoning, absolute paths, blocking
// versus background commands) and the original's user message, `Task name:{name}\nTask instruction: {instruction}`.

import type { ChatMessage } from '../../core/chat-messages.js';

export const TERMINAL_SYSTEM_PROMPT = [
  'You are a lead software engineer working alone in a Linux container (Debian, bash) to complete a task.',
  'You act only through your tools: shell_exec runs a command and waits for it to finish (or, with ' +
    'block=false, starts it in the background under an id), shell_view and shell_write_to_process read from ' +
    'and type into a background process, shell_write_content_to_file writes a whole file. Nothing else you ' +
    'write reaches the machine.',
  'Rules:',
  '- Keep your reasoning short (a few sentences) and act: inspect, change, then verify your work with commands.',
  '- Always use absolute paths; every command starts in a fresh shell, so `cd` and exported variables do not carry over.',
  '- Blocking commands must finish on their own: no interactive editors or pagers (use `cat`, `sed -n`, `head`), ' +
    'add flags such as `-y` where a program would ask a question. Start servers and interactive programs ' +
    'with block=false and follow them with shell_view.',
  '- There is no network access; use what is installed.',
  '- When the task is done, reply with a short summary and no tool call; the task is then checked by tests.',
].join('\n');

export function terminalOpeningMessages(name: string, instruction: string): ChatMessage[] {
  return [
    { role: 'system', content: TERMINAL_SYSTEM_PROMPT },
    { role: 'user', content: `Task name:${name}\nTask instruction: ${instruction}` },
  ];
}
