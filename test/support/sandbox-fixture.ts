// Shared by the tests that start real containers: rollout ids unique to this test file's process, and a
// cleanup that removes every container those ids own, whatever state a failed test left them in.

import Docker from 'dockerode';
import type { SandboxSpec } from '../../environments/sandbox.js';
import { buildSandboxImages } from '../../environments/sandbox-images.js';
import { LABELS } from '../../environments/sandbox-lease.js';

export const docker = new Docker();

/** The python sandbox with small limits, as the tests use it. */
export const PYTHON_SPEC: SandboxSpec = {
  image: 'openclaw/sandbox-python',
  limits: { memoryBytes: 256 * 1024 * 1024, cpus: 0.5, pids: 64 },
  network: false,
  user: 'agent',
};

/**
 * Builds the image when this Docker host lacks it (a developer's first `npm test`; CI builds them in .ci/run
 * first). Minutes the first time, nothing after.
 */
export async function ensureImage(image: string): Promise<void> {
  const present = await docker
    .getImage(image)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (!present) await buildSandboxImages({ only: [image] });
}

/** How long a `beforeAll` that may build an image can take. */
export const IMAGE_BUILD_TIMEOUT_MS = 10 * 60_000;

export interface RolloutIds {
  /** A fresh rollout id starting with this file's prefix. */
  next(label: string): string;
  /** Removes every container whose rollout id has this file's prefix; returns how many there were. */
  removeAll(): Promise<number>;
  /** Container ids (any state) that still carry this file's prefix. */
  leftovers(): Promise<string[]>;
}

export function rolloutIds(testName: string): RolloutIds {
  const prefix = `test-${testName}-${process.pid}-${Date.now().toString(36)}`;
  let count = 0;
  const leftovers = async (): Promise<string[]> => {
    const containers = await docker.listContainers({
      all: true,
      filters: { label: [`${LABELS.managed}=true`] },
    });
    return containers
      .filter((container) => container.Labels[LABELS.rolloutId]?.startsWith(prefix))
      .map((container) => container.Id);
  };
  return {
    next(label) {
      count += 1;
      return `${prefix}-${count}-${label}`;
    },
    leftovers,
    async removeAll() {
      const ids = await leftovers();
      await Promise.all(
        ids.map((id) =>
          docker
            .getContainer(id)
            .remove({ force: true })
            .catch(() => undefined),
        ),
      );
      return ids.length;
    },
  };
}

/** Polls `check` until it is true or `timeoutMs` passes; returns the last answer. */
export async function eventually(
  check: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 250,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
