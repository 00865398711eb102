// `npx tsx scripts/sandbox-images.ts images build [...]`: the `images` commands without the rest of the CLI,
// for .ci/run and machines where only Docker matters.
import { Command } from 'commander';
import { registerImageCommands } from '../cli/images-command.js';

const program = new Command('openclaw-rl').showHelpAfterError();
registerImageCommands(program);
await program.parseAsync();
