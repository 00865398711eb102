// Which image a terminal task runs in: the image its task.yaml names (`docker_image` or `image`), else the
// image built from its own Dockerfile (`openclaw/tbench-<task name>`, built on the kind's default image given
// as the build argument BASE_IMAGE), else the kind's default image.

import { buildImageFromFolder } from '../sandbox-images.js';
import type { TerminalTaskData } from './terminal-tasks.js';

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
