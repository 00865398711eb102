// Building sandbox images: a tiny image defined in a temporary folder is built, skipped while up to date and
// rebuilt when its Dockerfile changes; the `images build` command reports the project's images as up to date
// (.ci/run built them before the tests).

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { registerImageCommands } from '../../cli/images-command.js';
import {
  buildSandboxImages,
  DEFAULT_BASE_IMAGE,
  listSandboxImages,
} from '../../environments/sandbox-images.js';
import { docker } from '../support/sandbox-fixture.js';

const folderName = `test-image-${process.pid}`;
const image = `openclaw/${folderName}`;
let imagesDir: string;

beforeAll(async () => {
  imagesDir = await mkdtemp(join(tmpdir(), 'openclaw-images-'));
  await writeDockerfile('first');
});

afterAll(async () => {
  await docker
    .getImage(image)
    .remove({ force: true })
    .catch(() => undefined);
  await rm(imagesDir, { recursive: true, force: true });
});

async function writeDockerfile(marker: string): Promise<void> {
  const folder = join(imagesDir, folderName);
  await rm(folder, { recursive: true, force: true });
  await mkdir(folder, { recursive: true });
  await writeFile(
    join(folder, 'Dockerfile'),
    `ARG BASE_IMAGE\nFROM \${BASE_IMAGE}\nCOPY ca-certificates/ /opt/ca/\nRUN echo ${marker} > /marker\n`,
  );
}

async function markerOf(name: string): Promise<string> {
  const container = await docker.createContainer({ Image: name, Cmd: ['cat', '/marker'] });
  try {
    await container.start();
    await container.wait();
    const logs = await container.logs({ stdout: true });
    return logs.subarray(8).toString().trim(); // one frame: 8-byte header, then the text
  } finally {
    await container.remove({ force: true });
  }
}

describe('buildSandboxImages', () => {
  it('builds an image, skips it while up to date, and rebuilds it when its inputs change', async () => {
    const lines: string[] = [];
    const options = { imagesDir, base: DEFAULT_BASE_IMAGE, log: (line: string) => lines.push(line) };
    const first = await buildSandboxImages(options);
    expect(first.built.map((built) => built.image)).toEqual([image]);
    expect(await markerOf(image)).toBe('first');

    const second = await buildSandboxImages(options);
    expect(second).toMatchObject({ built: [], skipped: [image] });

    await writeDockerfile('second');
    const third = await buildSandboxImages({ ...options, only: [folderName] });
    expect(third.built.map((built) => built.image)).toEqual([image]);
    expect(await markerOf(image)).toBe('second');
    expect(lines).toContain(`skipped ${image} (up to date)`);
  });

  it('builds a folder without a Dockerfile with the one its images folder shares', async () => {
    const sharedDir = await mkdtemp(join(tmpdir(), 'openclaw-images-shared-'));
    const sharedImage = `openclaw/${folderName}-shared`;
    try {
      await writeFile(
        join(sharedDir, 'Dockerfile'),
        `ARG BASE_IMAGE\nFROM \${BASE_IMAGE}\nCOPY marker.txt /marker\n`,
      );
      await mkdir(join(sharedDir, `${folderName}-shared`));
      await writeFile(join(sharedDir, `${folderName}-shared`, 'marker.txt'), 'from its own folder\n');
      const report = await buildSandboxImages({ imagesDir: sharedDir, base: DEFAULT_BASE_IMAGE });
      expect(report.built.map((built) => built.image)).toEqual([sharedImage]);
      expect(await markerOf(sharedImage)).toBe('from its own folder');
    } finally {
      await docker
        .getImage(sharedImage)
        .remove({ force: true })
        .catch(() => undefined);
      await rm(sharedDir, { recursive: true, force: true });
    }
  });

  it('refuses an unknown image name', async () => {
    await expect(buildSandboxImages({ imagesDir, only: ['nope'] })).rejects.toThrow(/no image nope/);
  });

  it('reports a failing build with its output', async () => {
    const brokenDir = await mkdtemp(join(tmpdir(), 'openclaw-images-broken-'));
    try {
      await mkdir(join(brokenDir, folderName));
      await writeFile(
        join(brokenDir, folderName, 'Dockerfile'),
        `ARG BASE_IMAGE\nFROM \${BASE_IMAGE}\nRUN exit 7\n`,
      );
      await expect(buildSandboxImages({ imagesDir: brokenDir, base: DEFAULT_BASE_IMAGE })).rejects.toThrow(
        /building openclaw\/test-image-\d+ failed[\s\S]*returned a non-zero code: 7/,
      );
    } finally {
      await rm(brokenDir, { recursive: true, force: true });
    }
  });
});

describe('openclaw-rl images build', () => {
  it('lists the project images and skips them when they are up to date', async () => {
    expect(await listSandboxImages()).toEqual(
      expect.arrayContaining([
        'openclaw/sandbox-python',
        'openclaw/sandbox-shell',
        'openclaw/swe-daterange',
        'openclaw/swe-iniconf',
        'openclaw/swe-semver',
      ]),
    );
    const printed: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((line: string) => printed.push(line));
    try {
      const program = new Command('openclaw-rl').exitOverride();
      registerImageCommands(program);
      await program.parseAsync(['images', 'build', '--only', 'sandbox-python', 'sandbox-shell'], {
        from: 'user',
      });
    } finally {
      spy.mockRestore();
    }
    expect(printed.at(-1)).toBe(
      `base: ${DEFAULT_BASE_IMAGE}\nskipped: openclaw/sandbox-python (up to date)\nskipped: openclaw/sandbox-shell (up to date)`,
    );
  });
});
