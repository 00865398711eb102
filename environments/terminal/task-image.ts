// Which image a terminal task runs in: the image its task.yaml names (`docker_image` or `image`), else the
// image built from its own Dockerfile, else the kind's default image. A bundled task's image is
// `openclaw/tbench-<task name>`; any other folder's also carries a hash of its path, so two published sets with
// a task of the same name ("0", "hello-world") do not share one. The Dockerfile is built as released, except
// that a base image it starts FROM which this host does not have is replaced by its local equivalent
// (`baseImages`; terminal-bench's ghcr.io/laude-institute/t-bench/* by default), built here when missing: the
// task folder itself is never changed. The kind's default image is passed as the build argument BASE_IMAGE.

import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fnv1a64Hex } from '../../core/fnv1a64.js';
import {
  type BuiltImage,
  buildImageFromFolder,
  buildSandboxImages,
  imageExists,
  listSandboxImages,
} from '../sandbox-images.js';
import {
  BUNDLED_TASKS_DIR,
  readTaskFile,
  readTerminalTaskFolder,
  type TerminalTaskData,
} from './terminal-tasks.js';

export function taskImageName(task: TerminalTaskData, defaultImage: string): string {
  if (task.image !== null) return task.image;
  if (!task.hasDockerfile) return defaultImage;
  const slug = task.name.toLowerCase().replace(/[^a-z0-9._-]/g, '-');
  const bundled = join(BUNDLED_TASKS_DIR, task.name) === task.folder;
  return bundled
    ? `openclaw/tbench-${slug}`
    : `openclaw/tbench-${slug}-${fnv1a64Hex(task.folder).slice(0, 8)}`;
}

/** The local image `baseImages` maps `image` to (an exact key, or one ending in `*`), or null. */
export function mappedBaseImage(image: string, baseImages: Record<string, string>): string | null {
  const exact = baseImages[image];
  if (exact !== undefined) return exact;
  for (const [pattern, local] of Object.entries(baseImages))
    if (pattern.endsWith('*') && image.startsWith(pattern.slice(0, -1))) return local;
  return null;
}

const FROM_LINE = /^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$/i;

/**
 * The Dockerfile with each FROM image that `replace` maps swapped for its local equivalent (the `--platform`
 * flag of such a line dropped: the equivalent is built for this host). Stage names and `${ARG}` images stay.
 */
export async function mapDockerfileBases(
  dockerfile: string,
  replace: (image: string) => Promise<string | null>,
): Promise<{ dockerfile: string; mapped: Record<string, string> }> {
  const stages = new Set<string>();
  const mapped: Record<string, string> = {};
  const lines: string[] = [];
  for (const line of dockerfile.split('\n')) {
    const match = FROM_LINE.exec(line);
    if (!match) {
      lines.push(line);
      continue;
    }
    const [, from, flags, image, rest] = match as unknown as [string, string, string, string, string];
    const stage = /\s+AS\s+(\S+)/i.exec(rest)?.[1];
    const local = image.includes('$') || stages.has(image.toLowerCase()) ? null : await replace(image);
    if (stage) stages.add(stage.toLowerCase());
    if (local === null) {
      lines.push(line);
      continue;
    }
    mapped[image] = local;
    lines.push(`${from}${flags.replace(/--platform=\S+\s+/gi, '')}${local}${rest}`);
  }
  return { dockerfile: lines.join('\n'), mapped };
}

/**
 * Builds the task's image from its Dockerfile when it has one and names no image (skipped when up to date),
 * with the bases this host lacks replaced by their local equivalents.
 */
export async function ensureTaskImage(
  task: TerminalTaskData,
  defaultImage: string,
  baseImages: Record<string, string>,
): Promise<void> {
  if (task.image !== null || !task.hasDockerfile) return;
  const released = (await readTaskFile(task, 'Dockerfile')).toString('utf8');
  const unmapped: string[] = [];
  const { dockerfile, mapped } = await mapDockerfileBases(released, async (image) => {
    if (await imageExists(image)) return null;
    const local = mappedBaseImage(image, baseImages);
    if (local === null) unmapped.push(image);
    return local;
  });
  for (const local of new Set(Object.values(mapped))) await ensureLocalEquivalent(local);
  try {
    await buildImageFromFolder(taskImageName(task, defaultImage), task.folder, {
      base: defaultImage,
      ...(Object.keys(mapped).length > 0 && { dockerfile }),
    });
  } catch (error) {
    const hint =
      unmapped.length > 0
        ? ` (its Dockerfile starts FROM ${unmapped.join(', ')}, which this host does not have and \`terminal.baseImages\` does not map: pull it, or map it to a local image)`
        : '';
    throw new Error(
      `the image of terminal task ${task.folder} could not be built${hint}: ${(error as Error).message}`,
    );
  }
}

/** A mapped base image: this project's own definitions are built when missing; others must be here. */
async function ensureLocalEquivalent(image: string): Promise<void> {
  if (await imageExists(image)) return;
  if ((await listSandboxImages()).includes(image)) {
    await buildSandboxImages({ only: [image] });
    return;
  }
  throw new Error(`terminal.baseImages maps to ${image}, which is not on this host and not defined here`);
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
