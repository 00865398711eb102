// Which image a terminal task runs in: the image its task.yaml names (`docker_image` or `image`), else the
// image built from its own Dockerfile (`openclaw/tbench-<task name>`, built on the kind's default image given
// as the build argument BASE_IMAGE), else the kind's default image.

import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type BuiltImage, buildImageFromFolder } from '../sandbox-images.js';
import { BUNDLED_TASKS_DIR, readTerminalTaskFolder, type TerminalTaskData } from './terminal-tasks.js';

export function taskImageName(task: TerminalTaskData, defaultImage: string): string {
  if (task.image !== null) return task.image;
  if (task.hasDockerfile) return `openclaw/tbench-${task.name.toLowerCase().replace(/[^a-z0-9._-]/g, '-')}`;
  return defaultImage;
}

/** Builds the task's image from its Dockerfile when it has one and names no image (skipped when up to date). */
export async function ensureTaskImage(task: TerminalTaskData, defaultImage: string): Promise<void> {
  if (task.image !== null || !task.hasDockerfile) return;
  try {
    await buildImageFromFolder(taskImageName(task, defaultImage), task.folder, { base: defaultImage });
  } catch (error) {
    throw new Error(
      `the image of terminal task ${task.folder} could not be built: ${(error as Error).message}`,
    );
  }
}

/**
 * Builds the images of the bundled tasks that bring a Dockerfile (for `openclaw-rl images build`, so a first
 * rollout does not wait on a build); returns the images built and those already up to date.
 */
export async function buildBundledTaskImages(
  defaultImage: string,
  log: (line: string) => void = () => {},
): Promise<{ built: BuiltImage[]; skipped: string[] }> {
  const report = { built: [] as BuiltImage[], skipped: [] as string[] };
  const entries = await readdir(BUNDLED_TASKS_DIR, { withFileTypes: true });
  for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const task = await readTerminalTaskFolder(join(BUNDLED_TASKS_DIR, entry.name));
    if (task.image !== null || !task.hasDockerfile) continue;
    const image = taskImageName(task, defaultImage);
    const built = await buildImageFromFolder(image, task.folder, { base: defaultImage, log });
    if (built === null) report.skipped.push(image);
    else report.built.push(built);
  }
  return report;
}
