// Engine calls on one container, by name or id, where "not there" is an answer rather than an error.

import type Docker from 'dockerode';
import { isDockerConflict, isDockerNotFound } from './docker-errors.js';

/** The container's inspection, or null when there is none of that name or id. */
export async function inspectContainer(
  docker: Docker,
  nameOrId: string,
): Promise<Docker.ContainerInspectInfo | null> {
  try {
    return await docker.getContainer(nameOrId).inspect();
  } catch (error) {
    if (isDockerNotFound(error)) return null;
    throw error;
  }
}

/** Removes a container (killing it first); "already gone" and "already being removed" are success. */
export async function removeContainer(docker: Docker, id: string): Promise<void> {
  try {
    await docker.getContainer(id).remove({ force: true });
  } catch (error) {
    if (isDockerNotFound(error)) return;
    if (!isDockerConflict(error)) throw error;
  }
  // AutoRemove may be removing it at the same moment: wait until it is really gone.
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if ((await inspectContainer(docker, id)) === null) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
