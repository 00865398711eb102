// `openclaw-rl images build`: builds the sandbox images (docker/images/*, environments/*/images/*) and the
// bundled terminal tasks' own images on this host's Docker engine, making the local Debian base first when no
// base is given and none exists. Up-to-date images are skipped. On a terminal a bar counts the images done;
// elsewhere (or with --no-progress, --verbose) each image gets its line.

import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import {
  type BuildImagesReport,
  buildSandboxImages,
  DEFAULT_BASE_IMAGE,
  listSandboxImages,
} from '../environments/sandbox-images.js';
import { buildBundledTaskImages } from '../environments/terminal/task-image.js';
import { BUNDLED_TASKS_DIR, readTerminalTaskFolder } from '../environments/terminal/terminal-tasks.js';
import { drawsProgress, type ProgressBar, type ProgressStream, progressBar } from './progress.js';

/** The terminal kind's default image, the base of its tasks' own Dockerfiles. */
const TERMINAL_IMAGE = 'openclaw/sandbox-terminal';

interface ImagesBuildFlags {
  base?: string;
  only?: string[];
  force?: boolean;
  verbose?: boolean;
  progress?: boolean;
}

/** The bundled terminal tasks that bring a Dockerfile and name no image: the ones built after the sandboxes. */
async function bundledTaskImageCount(): Promise<number> {
  let count = 0;
  for (const entry of await readdir(BUNDLED_TASKS_DIR, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const task = await readTerminalTaskFolder(join(BUNDLED_TASKS_DIR, entry.name));
    if (task.image === null && task.hasDockerfile) count++;
  }
  return count;
}

/** How many images a build with these flags goes through (built or skipped). */
export async function imagesToBuild(only: string[] | undefined): Promise<number> {
  if (only !== undefined && only.length > 0) return only.length;
  return (await listSandboxImages()).length + (await bundledTaskImageCount());
}

/**
 * The build's log: on a bar, every "built"/"skipped" line counts one image done and the latest line shows
 * beside the bar; without one, the lines are printed as they come.
 */
export function imageBuildLog(bar: ProgressBar, total: number, print: (line: string) => void) {
  let done = 0;
  return (line: string) => {
    if (!bar.drawing) return print(line);
    if (/^(built|skipped) /.test(line)) done++;
    bar.update(done, Math.max(total, done, 1), { current: line });
  };
}

export function registerImageCommands(
  program: Command,
  options: { progressStream?: ProgressStream } = {},
): void {
  const images = program.command('images').description('sandbox images for Track 2 environments');
  images
    .command('build')
    .description(
      `build the sandbox images (docker/images/*); the base defaults to ${DEFAULT_BASE_IMAGE}, made locally`,
    )
    .option('--base <image>', 'base image for every sandbox image (Debian bookworm or a derivative)')
    .option('--only <name...>', 'build only these images (e.g. sandbox-python)')
    .option('--force', 'rebuild images that are up to date')
    .option('--verbose', "print Docker's build output (no progress bar)")
    .option('--no-progress', 'a line per image instead of a progress bar (drawn only on a terminal)')
    .action(async (flags: ImagesBuildFlags) => {
      const stream = options.progressStream ?? process.stderr;
      const bar = progressBar('images |{bar}| {value}/{total} done | {current}', {
        stream,
        enabled: drawsProgress(flags, stream) && flags.verbose !== true,
      });
      const log = imageBuildLog(bar, await imagesToBuild(flags.only), (line) => console.log(line));
      let report: BuildImagesReport;
      try {
        report = await buildSandboxImages({
          ...(flags.base !== undefined ? { base: flags.base } : {}),
          ...(flags.only !== undefined ? { only: flags.only } : {}),
          force: flags.force === true,
          verbose: flags.verbose === true,
          log,
        });
        // The bundled terminal tasks that bring their own Dockerfile, on top of the terminal sandbox image.
        if (flags.only === undefined) {
          const tasks = await buildBundledTaskImages(TERMINAL_IMAGE, log);
          report.built.push(...tasks.built);
          report.skipped.push(...tasks.skipped);
        }
      } finally {
        bar.stop();
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
