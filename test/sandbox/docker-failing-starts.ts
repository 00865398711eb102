// A test double around the real Docker Engine client: containers are really created and started, but the
// starts it is told to fail fail first, the way Docker 20.10 fails one now and then when several containers
// start at once. The error has docker-modem's shape and the message the Engine gave in a shared-engine run.

import Docker from 'dockerode';

/**
 * How a failed start leaves the container: `auto-removed` is what the Engine does for an AutoRemove container
 * (it removes it before answering); `left-created` covers an Engine that keeps it.
 */
export type FailedStart = 'auto-removed' | 'left-created' | 'other-500';

/** docker-modem's error for an Engine answer of 500 with this message. */
function engineError(message: string): Error {
  return Object.assign(new Error(`(HTTP code 500) server error - ${message} `), {
    reason: 'server error',
    statusCode: 500,
    json: { message },
  });
}

export class DockerWithFailingStarts extends Docker {
  /** Containers this client created, in order. */
  readonly created: string[] = [];

  /** `failures[i]` is how the i-th created container's start fails; later ones start normally. */
  constructor(private readonly failures: FailedStart[]) {
    super();
  }

  override async createContainer(options: Docker.ContainerCreateOptions): Promise<Docker.Container> {
    const container = await super.createContainer(options);
    const failure = this.failures[this.created.length];
    this.created.push(container.id);
    if (failure === undefined) return container;
    container.start = async () => {
      if (failure === 'other-500') throw engineError('failed to create task for container: cgroup busy');
      if (failure === 'auto-removed') await container.remove({ force: true });
      throw engineError(
        `remount /var/lib/docker/overlay2/${container.id}/merged/etc/resolv.conf, flags: 0x44000: invalid argument`,
      );
    };
    return container;
  }
}
