// The gui episode's opening messages, in this project's words with the original's contract (spec 10.2): the
// policy sees the screen, acts through the `computer_use` tool in a 1000×1000 relative coordinate space, and
// ends with terminate. The first screenshot is an `image_url` part of the user message.

import type { ChatMessage } from '../../core/chat-messages.js';

export const GUI_SYSTEM_PROMPT =
  'You operate a Linux desktop to complete a task. Each turn you see a screenshot of the screen; act with ' +
  'the computer_use tool, one action per call (click, type, press keys, scroll, wait). Coordinates are ' +
  'relative: x and y go from 0 (left/top) to 1000 (right/bottom) whatever the screen size. Before each call, ' +
  'say in one short sentence what you are about to do. When the task is done call computer_use with ' +
  'action "terminate" and status "success"; if it cannot be done, terminate with status "failure".';

export function guiOpeningMessages(instruction: string, screenshotUrl: string): ChatMessage[] {
  return [
    { role: 'system', content: GUI_SYSTEM_PROMPT },
    {
      role: 'user',
      content: [
        {
          type: 'text',
          text: `Please generate the next move according to the UI screenshot and the instruction.\n\nInstruction: ${instruction}`,
        },
        { type: 'image_url', image_url: { url: screenshotUrl } },
      ],
    },
  ];
}
