// `openclaw-rl images build`: builds the sandbox images (docker/images/*, environments/*/images/*) and the
// bundled terminal tasks' own images on this host's Docker engine, making the local Debian base first when no
// base is given and none exists. Up-to-date images are skipped.

import type { Command } from 'commander';
import {
  type BuildImagesReport,
  buildSandboxImages,
  DEFAULT_BASE_IMAGE,
} from '../environments/sandbox-images.js';
import { buildBundledTaskImages } from '../environments/terminal/task-image.js';

/** The terminal kind's default image, the base of its tasks' own Dockerfiles. */
const TERMINAL_IMAGE = 'openclaw/sandbox-terminal';

interface ImagesBuildFlags {
  base?: string;
  only?: string[];
  force?: boolean;
  verbose?: boolean;
}

export function registerImageCommands(program: Command): void {
  const images = program.command('images').description('sandbox images for Track 2 environments');
  images
    .command('build')
    .description(
      `build the sandbox images (docker/images/*); the base defaults to ${DEFAULT_BASE_IMAGE}, made locally`,
    )
    .option('--base <image>', 'base image for every sandbox image (Debian bookworm or a derivative)')
    .option('--only <name...>', 'build only these images (e.g. sandbox-python)')
    .option('--force', 'rebuild images that are up to date')
    .option('--verbose', "print Docker's build output")
    .action(async (flags: ImagesBuildFlags) => {
      const report = await buildSandboxImages({
        ...(flags.base !== undefined ? { base: flags.base } : {}),
        ...(flags.only !== undefined ? { only: flags.only } : {}),
        force: flags.force === true,
        verbose: flags.verbose === true,
        log: (line) => console.log(line),
      });
      // The bundled terminal tasks that bring their own Dockerfile, on top of the terminal sandbox image.
      if (flags.only === undefined) {
        const tasks = await buildBundledTaskImages(TERMINAL_IMAGE, (line) => console.log(line));
        report.built.push(...tasks.built);
        report.skipped.push(...tasks.skipped);
      }
      console.log(formatBuildReport(report));
    });
}

/** A short summary: the base, then what was built (with times) and what was skipped. */
export function formatBuildReport(report: BuildImagesReport): string {
  const lines = [`base: ${report.base}${report.baseBuilt ? ' (made now)' : ''}`];
  for (const built of report.built) lines.push(`built: ${built.image} (${built.seconds.toFixed(1)} s)`);
  for (const skipped of report.skipped) lines.push(`skipped: ${skipped} (up to date)`);
  return lines.join('\n');
}
