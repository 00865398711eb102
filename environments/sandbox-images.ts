// Builds the sandbox images from docker/images/<name>/ (image `openclaw/<name>`), on a base given by the
// caller or the Debian base made locally by docker/base-image.sh (no registry needed). A folder without a
// Dockerfile of its own is built with the Dockerfile beside it, one level up, which images made alike (the swe
// fixtures: one repository each) share. Each image is labelled with a hash of its inputs (its folder, its
// Dockerfile, the extra CA certificates and the base image's id), so a second run skips what is up to date
// and rebuilds only what changed.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { pack } from 'tar-stream';
import { isDockerNotFound } from './docker-errors.js';

export const DEFAULT_BASE_IMAGE = 'openclaw/debian-base:bookworm';
const IMAGE_PREFIX = 'openclaw/';
const CONTEXT_HASH_LABEL = 'openclaw.image-context-hash';
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface BuildImagesOptions {
  /** Base image for every sandbox image; default: the local Debian base (made here when missing). */
  base?: string;
  /** Build only these images (`sandbox-python` or `openclaw/sandbox-python`). */
  only?: string[];
  /** Rebuild even when the image is up to date. */
  force?: boolean;
  docker?: Docker;
  /** Progress lines (what is built or skipped, and the build's own output when `verbose`). */
  log?: (line: string) => void;
  verbose?: boolean;
  /** Folder(s) of the image definitions; default docker/images and environments/<kind>/images. */
  imagesDir?: string | string[];
  /** Folder of extra CA certificates to trust in the images; default /usr/local/share/ca-certificates. */
  caCertificatesDir?: string;
}

export interface BuiltImage {
  image: string;
  seconds: number;
}

export interface BuildImagesReport {
  base: string;
  /** The local Debian base was made by this run. */
  baseBuilt: boolean;
  built: BuiltImage[];
  skipped: string[];
}

/** Where image definitions live: docker/images/<name>/ and each environment kind's environments/<kind>/images/<name>/. */
export async function defaultImageDirs(): Promise<string[]> {
  const dirs = [join(REPO_ROOT, 'docker/images')];
  const kinds = await readdir(join(REPO_ROOT, 'environments'), { withFileTypes: true });
  for (const kind of kinds
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()) {
    const dir = join(REPO_ROOT, 'environments', kind, 'images');
    if (await isDirectory(dir)) dirs.push(dir);
  }
  return dirs;
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isFile(),
    () => false,
  );
}

/** One image definition: the image `openclaw/<folder name>` built from a folder and a Dockerfile. */
export interface ImageDefinition {
  image: string;
  folder: string;
  /** The Dockerfile shared by the folders beside this one, when the folder has none of its own. */
  sharedDockerfile?: string;
}

/**
 * The image definitions under `imagesDirs`, sorted by image name: each folder with a Dockerfile, and, where an
 * images folder has a Dockerfile itself, each of its folders without one (built with that shared Dockerfile).
 */
export async function listImageDefinitions(imagesDirs?: string | string[]): Promise<ImageDefinition[]> {
  const dirs = imagesDirs === undefined ? await defaultImageDirs() : [imagesDirs].flat();
  const definitions = new Map<string, ImageDefinition>();
  for (const dir of dirs) {
    const shared = join(dir, 'Dockerfile');
    const sharedDockerfile = (await isFile(shared)) ? shared : undefined;
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const folder = join(dir, entry.name);
      const ownDockerfile = await isFile(join(folder, 'Dockerfile'));
      if (!ownDockerfile && sharedDockerfile === undefined) continue;
      const image = `${IMAGE_PREFIX}${entry.name}`;
      const other = definitions.get(image);
      if (other) throw new Error(`image ${image} is defined twice: ${other.folder} and ${folder}`);
      definitions.set(image, ownDockerfile ? { image, folder } : { image, folder, sharedDockerfile });
    }
  }
  return [...definitions.values()].sort((a, b) => a.image.localeCompare(b.image));
}

/** The image names defined under `imagesDirs` (default: every definition in this repository), sorted. */
export async function listSandboxImages(imagesDirs?: string | string[]): Promise<string[]> {
  return (await listImageDefinitions(imagesDirs)).map((definition) => definition.image);
}

export async function buildSandboxImages(options: BuildImagesOptions = {}): Promise<BuildImagesReport> {
  const docker = options.docker ?? new Docker();
  const log = options.log ?? (() => {});
  const definitions = new Map(
    (await listImageDefinitions(options.imagesDir)).map((definition) => [definition.image, definition]),
  );
  const wanted = selectImages([...definitions.keys()], options.only);

  let base = options.base ?? DEFAULT_BASE_IMAGE;
  let baseBuilt = false;
  let baseId = await imageId(docker, base);
  if (baseId === null && options.base === undefined) {
    log(`making the local base image ${base} (debootstrap; a few minutes)`);
    base = await makeLocalBaseImage(base);
    baseBuilt = true;
    baseId = await imageId(docker, base);
  }
  // A named base that is not here is left to `docker build`, which pulls it where a registry is reachable.

  const certificates = await readCertificates(
    options.caCertificatesDir ?? '/usr/local/share/ca-certificates',
  );
  const report: BuildImagesReport = { base, baseBuilt, built: [], skipped: [] };
  for (const image of wanted) {
    const { folder, sharedDockerfile } = definitions.get(image) as ImageDefinition;
    const built = await buildFolderIfChanged(docker, image, folder, {
      base,
      baseId,
      certificates,
      force: options.force,
      log,
      verbose: options.verbose,
      dockerfile: sharedDockerfile === undefined ? undefined : await readFile(sharedDockerfile, 'utf8'),
    });
    if (built === null) report.skipped.push(image);
    else report.built.push(built);
  }
  return report;
}

interface FolderBuildOptions {
  base: string;
  baseId: string | null;
  certificates: ContextFile[];
  force?: boolean;
  log: (line: string) => void;
  verbose?: boolean;
  dockerfile?: string;
}

/** Builds `image` from `folder` unless its label says it is up to date; null when skipped. */
async function buildFolderIfChanged(
  docker: Docker,
  image: string,
  folder: string,
  options: FolderBuildOptions,
): Promise<BuiltImage | null> {
  const { base, log } = options;
  const context = await readContext(folder);
  const dockerfile = options.dockerfile;
  const files = [
    ...(dockerfile === undefined
      ? context
      : [
          ...context.filter((file) => file.path !== 'Dockerfile'),
          { path: 'Dockerfile', content: Buffer.from(dockerfile) },
        ]),
    ...options.certificates,
  ];
  const hash = contextHash(files, base, options.baseId);
  if (!options.force && (await imageLabel(docker, image, CONTEXT_HASH_LABEL)) === hash) {
    log(`skipped ${image} (up to date)`);
    return null;
  }
  log(`building ${image} on ${base}`);
  const previousId = await imageId(docker, image);
  const started = Date.now();
  await buildOne(
    docker,
    image,
    files,
    { BASE_IMAGE: base },
    { [CONTEXT_HASH_LABEL]: hash },
    options.verbose ? log : undefined,
  );
  const seconds = (Date.now() - started) / 1000;
  await removeReplacedImage(docker, previousId, await imageId(docker, image));
  log(`built ${image} in ${seconds.toFixed(1)} s`);
  return { image, seconds };
}

export interface FolderImageOptions {
  docker?: Docker;
  /** The Dockerfile to build with instead of the folder's (the folder itself is not changed). */
  dockerfile?: string;
  /** Passed as the build argument BASE_IMAGE (default: the local Debian base). */
  base?: string;
  force?: boolean;
  log?: (line: string) => void;
  caCertificatesDir?: string;
}

/**
 * Builds one image from any folder with a Dockerfile (a user's task folder), skipping it when up to date.
 * Loaders use it for tasks that bring their own Dockerfile.
 */
export async function buildImageFromFolder(
  image: string,
  folder: string,
  options: FolderImageOptions = {},
): Promise<BuiltImage | null> {
  const docker = options.docker ?? new Docker();
  const base = options.base ?? DEFAULT_BASE_IMAGE;
  const certificates = await readCertificates(
    options.caCertificatesDir ?? '/usr/local/share/ca-certificates',
  );
  return buildFolderIfChanged(docker, image, folder, {
    base,
    baseId: await imageId(docker, base),
    certificates,
    force: options.force,
    log: options.log ?? (() => {}),
    dockerfile: options.dockerfile,
  });
}

/** Whether an image is on the Docker host. */
export async function imageExists(image: string, docker: Docker = new Docker()): Promise<boolean> {
  return (await imageId(docker, image)) !== null;
}

function selectImages(all: string[], only: string[] | undefined): string[] {
  if (only === undefined || only.length === 0) return all;
  return only.map((name) => {
    const full = name.startsWith(IMAGE_PREFIX) ? name.replace(/:latest$/, '') : `${IMAGE_PREFIX}${name}`;
    if (!all.includes(full)) throw new Error(`no image ${name}; known: ${all.join(', ')}`);
    return full;
  });
}

interface ContextFile {
  /** Path inside the build context. */
  path: string;
  content: Buffer;
}

async function readContext(folder: string): Promise<ContextFile[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  const files: ContextFile[] = [];
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    files.push({ path: relative(folder, full), content: await readFile(full) });
  }
  return files;
}

/** The host's extra CAs as `ca-certificates/*.crt`; none is fine (the folder is still created). */
async function readCertificates(dir: string): Promise<ContextFile[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const files: ContextFile[] = [];
  for (const name of names.filter((entry) => entry.endsWith('.crt')).sort()) {
    files.push({ path: `ca-certificates/${name}`, content: await readFile(join(dir, name)) });
  }
  return files;
}

function contextHash(files: ContextFile[], base: string, baseId: string | null): string {
  const hash = createHash('sha256').update(`${base}\0${baseId ?? ''}\0`);
  for (const file of [...files].sort((a, b) => a.path.localeCompare(b.path))) {
    hash.update(`${file.path}\0${file.content.length}\0`).update(file.content);
  }
  return hash.digest('hex').slice(0, 32);
}

async function buildOne(
  docker: Docker,
  image: string,
  files: ContextFile[],
  buildargs: Record<string, string>,
  labels: Record<string, string>,
  log: ((line: string) => void) | undefined,
): Promise<void> {
  const archive = pack();
  archive.entry({ name: 'ca-certificates/', type: 'directory', mode: 0o755 });
  for (const file of files)
    archive.entry({ name: file.path, size: file.content.length, mode: 0o644 }, file.content);
  archive.finalize();
  const stream = await docker.buildImage(archive as unknown as NodeJS.ReadableStream, {
    t: image,
    buildargs,
    labels,
    rm: true,
    forcerm: true,
  });
  const tail: string[] = [];
  const events = await new Promise<BuildEvent[]>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (error: Error | null, result: BuildEvent[]) => (error ? reject(error) : resolve(result)),
      (event: BuildEvent) => {
        const line = event.stream?.trimEnd();
        if (line) {
          tail.push(line);
          if (tail.length > 40) tail.shift();
          log?.(line);
        }
      },
    );
  });
  const failure = events.find((event) => event.error !== undefined);
  if (failure !== undefined) {
    throw new Error(`building ${image} failed: ${failure.error}\n${tail.join('\n')}`);
  }
}

interface BuildEvent {
  stream?: string;
  error?: string;
}

async function imageId(docker: Docker, image: string): Promise<string | null> {
  try {
    return (await docker.getImage(image).inspect()).Id;
  } catch (error) {
    if (isDockerNotFound(error)) return null;
    throw error;
  }
}

/** Deletes the image a rebuild untagged, so rebuilds do not pile up; one still in use is left alone. */
async function removeReplacedImage(
  docker: Docker,
  previousId: string | null,
  currentId: string | null,
): Promise<void> {
  if (previousId === null || previousId === currentId) return;
  await docker
    .getImage(previousId)
    .remove()
    .catch(() => undefined);
}

async function imageLabel(docker: Docker, image: string, label: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(image).inspect()).Config.Labels?.[label];
  } catch (error) {
    if (isDockerNotFound(error)) return undefined;
    throw error;
  }
}

/** Runs docker/base-image.sh (debootstrap + docker import; needs root) and returns the image it made. */
async function makeLocalBaseImage(image: string): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', [join(REPO_ROOT, 'docker/base-image.sh')], {
    env: { ...process.env, OPENCLAW_BASE_IMAGE: image },
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout.trim().split('\n').at(-1) ?? image;
}
