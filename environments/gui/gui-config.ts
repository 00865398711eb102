// The gui environment's settings (spec 10.2, scaled to one desktop container per episode): the desktop image,
// its limits, the virtual screen, how screenshots are shrunk for the policy, and how long the desktop and the
// task's windows may take to appear. Validated with zod at the edge; everything else takes the parsed object.

import { z } from 'zod';
import { sandboxLimitsSchema } from '../sandbox-limits-schema.js';

export const guiConfigSchema = z.strictObject({
  /** Xvfb, openbox, xdotool, xwd + netpbm and the task applications (environments/gui/images/sandbox-desktop). */
  image: z.string().min(1).default('openclaw/sandbox-desktop'),
  // The X server, the window manager, each application and every xdotool/xwd run are processes.
  limits: sandboxLimitsSchema({
    memoryBytes: 1024 ** 3,
    cpus: 1,
    pids: 256,
    minMemoryBytes: 64 * 1024 ** 2,
    minPids: 32,
  }),
  screen: z
    .strictObject({
      width: z.number().int().min(320).max(7680).default(1280),
      height: z.number().int().min(240).max(4320).default(800),
    })
    .prefault({}),
  /** Screenshots wider than this are scaled down (aspect kept) before they are sent to the policy. */
  screenshotMaxWidth: z.number().int().min(64).default(1024),
  /** A user's OSWorld examples folder (`<dir>/<domain>/<id>.json` or `<dir>/<id>.json`); its tasks are served too. */
  tasksDir: z.string().min(1).optional(),
  /**
   * More folders a task id naming a task file (`…/<id>.json`) may lie in, beside the shipped tasks and
   * `tasksDir`; a task file anywhere else is refused, since its folder is where the task's own files come from.
   */
  taskFileRoots: z.array(z.string().min(1)).default([]),
  /** How long the display, the window manager and each launched application's window may take to appear. */
  startTimeoutMs: z.number().int().min(1_000).default(30_000),
  /** Limit of one xdotool run, one `execute` config step or one evaluator command. */
  commandTimeoutMs: z.number().int().min(1_000).default(60_000),
  /** Pause after an action before the screenshot, so the application has drawn its answer. */
  settleMs: z.number().int().min(0).default(400),
  /** The longest `wait` action honoured (seconds). */
  maxWaitSeconds: z.number().positive().default(10),
  reward: z
    .strictObject({
      success: z.number().default(1),
      failure: z.number().default(-1),
    })
    .prefault({}),
});

export type GuiConfig = z.infer<typeof guiConfigSchema>;
export type GuiConfigInput = z.input<typeof guiConfigSchema>;
export type ScreenSize = GuiConfig['screen'];

export function parseGuiConfig(input: GuiConfigInput = {}): GuiConfig {
  return guiConfigSchema.parse(input);
}
