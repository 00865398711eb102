// Known-good and known-bad computer_use action sequences for the bundled gui tasks (screen 1280×800,
// coordinates in the relative 0..1000 space), shared by the environment and the through-Temporal tests.

type Script = readonly Record<string, unknown>[];
export type BundledGuiTask = 'xterm-create-file' | 'xclock-close' | 'xedit-save-note';

const success = { action: 'terminate', status: 'success' };

export const KNOWN_GOOD: Record<BundledGuiTask, Script> = {
  'xterm-create-file': [
    { action: 'left_click', coordinate: [200, 250] },
    { action: 'type', text: "echo 'hello from the desktop' > ~/greeting.txt\n" },
    success,
  ],
  // The close button of the window frame.
  'xclock-close': [{ action: 'left_click', coordinate: [648, 262] }, success],
  'xedit-save-note': [
    { action: 'left_click', coordinate: [293, 391] },
    { action: 'type', text: 'buy milk' },
    { action: 'left_click', coordinate: [74, 86] }, // Save
    success,
  ],
};

export const KNOWN_BAD: Record<BundledGuiTask, Script> = {
  'xterm-create-file': [
    { action: 'left_click', coordinate: [200, 250] },
    { action: 'type', text: "echo 'hello from the laptop' > ~/greeting.txt\n" },
    success,
  ],
  'xclock-close': [{ action: 'left_click', coordinate: [563, 422] }, success],
  'xedit-save-note': [
    { action: 'left_click', coordinate: [293, 391] },
    { action: 'type', text: 'buy milk' },
    success,
  ],
};
