// The terminal environment's settings (spec 10.1): the default sandbox image, container limits, the shell
// tool's timeout (CAMEL TerminalToolkit's 20 s) and output clip, the evaluation's time cap (600 s), and where a
// user's own terminal-bench tasks live. Validated with zod at the edge; everything else takes the parsed object.

import { z } from 'zod';
import { describeZodError } from '../../core/training-settings.js';
import { sandboxLimitsSchema } from '../sandbox-limits-schema.js';

/**
 * terminal-bench's base images, mapped to the local equivalent built from environments/terminal/images/tbench-base
 * when the host does not have them (their registry is unreachable from many env hosts).
 */
export const DEFAULT_BASE_IMAGES: Record<string, string> = {
  'ghcr.io/laude-institute/t-bench/python-3-13:*': 'openclaw/tbench-base',
  'ghcr.io/laude-institute/t-bench/ubuntu-24-04:*': 'openclaw/tbench-base',
};

export const terminalConfigSchema = z.strictObject({
  /** Image for tasks that bring neither a Dockerfile nor an image name (environments/terminal/images/sandbox-terminal). */
  image: z.string().min(1).default('openclaw/sandbox-terminal'),
  limits: sandboxLimitsSchema({
    memoryBytes: 2 * 1024 ** 3,
    cpus: 1,
    pids: 256,
    minMemoryBytes: 32 * 1024 ** 2,
    minPids: 8,
  }),
  /** A folder of terminal-bench task folders (one folder per task, named by the task); served by name. */
  tasksDir: z.string().min(1).optional(),
  /** Build the image of a task that brings a Dockerfile when the task is loaded (skipped when up to date). */
  buildTaskImages: z.boolean().default(true),
  /**
   * Images a task's Dockerfile starts FROM that this host does not have, and the local image built instead
   * (`*` at the end of a key matches any tag). An image the host has is used as it is.
   */
  baseImages: z.record(z.string().min(1), z.string().min(1)).default(DEFAULT_BASE_IMAGES),
  /**
   * non-root: commands and tests run as the image's user when it is not root, else as uid 1000 owning the
   * image's working directory; image: as the image's user, whoever that is (root without capabilities).
   */
  runAs: z.enum(['non-root', 'image']).default('non-root'),
  /** Stop asking the policy once the task's max_agent_timeout_sec has passed since the reset. */
  enforceAgentTimeout: z.boolean().default(true),
  /** `shell_exec`'s timeout when the call names none. */
  commandTimeoutMs: z.number().int().min(100).default(20_000),
  /** The longest timeout a `shell_exec` call may ask for. */
  maxCommandTimeoutMs: z.number().int().min(100).default(600_000),
  /** Characters of a command's output the policy sees (head and tail kept, the middle cut). */
  maxOutputChars: z.number().int().min(64).default(8_000),
  /** The evaluation runs at most min(this, 4 · max_test_timeout_sec) seconds. */
  evalTimeoutCapSec: z.number().positive().default(600),
  /** How long a task's setup.sh may run at reset. */
  setupTimeoutMs: z.number().int().min(100).default(300_000),
});

export type TerminalConfig = z.infer<typeof terminalConfigSchema>;
export type TerminalConfigInput = z.input<typeof terminalConfigSchema>;

export function parseTerminalConfig(input: TerminalConfigInput = {}): TerminalConfig {
  const parsed = terminalConfigSchema.safeParse(input);
  if (!parsed.success) throw new Error(`invalid terminal options: ${describeZodError(parsed.error)}`);
  return parsed.data;
}
