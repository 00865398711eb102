// Track 2 commands: `worker env` (an env host), `rollout` (one rollout through Temporal), and `agentic
// start|status|pause|resume` (the Track 2 training loop), each in its own file; this adds them to the
// `openclaw-rl` program.
import type { Command } from 'commander';
import type { SandboxProviderFactory } from '../workers/env-worker.js';
import { registerAgenticCommands } from './agentic-commands.js';
import { registerEnvWorkerCommand } from './env-worker-command.js';
import { registerRolloutCommand } from './rollout-command.js';

export interface Track2Options {
  /** The sandbox provider of `worker env` (the Docker one); without it the host serves container-free kinds. */
  sandboxProvider?: SandboxProviderFactory;
}

export function registerTrack2Commands(program: Command, options: Track2Options = {}): void {
  registerEnvWorkerCommand(program, options.sandboxProvider);
  registerRolloutCommand(program);
  registerAgenticCommands(program);
}
