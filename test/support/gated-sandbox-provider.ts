// TEST DOUBLE around a real sandbox provider: `acquire` creates the container as usual, then waits at a gate
// for the rollouts a test chose, so a test can act (cancel a workflow, kill a process) while a container
// exists and its acquire has not answered yet. Everything else passes straight through.
import type { Sandbox, SandboxLease, SandboxProvider, SandboxSpec } from '../../environments/sandbox.js';

export interface AcquireGate {
  /** Resolves once `count` matching acquires have created their containers and wait at the gate. */
  reached: Promise<void>;
  /** Lets the waiting acquires (and any later matching ones) answer. */
  open(): void;
}

export class GatedSandboxProvider implements SandboxProvider {
  private gates: { match: (rolloutId: string) => boolean; arrive: () => void; opened: Promise<void> }[] = [];

  constructor(private readonly inner: SandboxProvider) {}

  /** Holds the answer of the next `count` acquires whose rollout id matches, after their container exists. */
  gate(match: (rolloutId: string) => boolean, count: number): AcquireGate {
    let arrived = 0;
    let reached!: () => void;
    let open!: () => void;
    const reachedPromise = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.gates.push({
      match,
      opened,
      arrive: () => {
        arrived += 1;
        if (arrived >= count) reached();
      },
    });
    return { reached: reachedPromise, open };
  }

  async acquire(
    spec: SandboxSpec,
    rolloutId: string,
    leaseMs: number,
  ): Promise<{ sandbox: Sandbox; lease: SandboxLease }> {
    const acquired = await this.inner.acquire(spec, rolloutId, leaseMs);
    const gate = this.gates.find((g) => g.match(rolloutId));
    if (gate) {
      gate.arrive();
      await gate.opened;
    }
    return acquired;
  }

  attach(rolloutId: string): Promise<Sandbox | null> {
    return this.inner.attach(rolloutId);
  }

  renew(rolloutId: string, leaseMs: number): Promise<void> {
    return this.inner.renew(rolloutId, leaseMs);
  }

  release(rolloutId: string): Promise<void> {
    return this.inner.release(rolloutId);
  }

  reapExpired(now?: number): Promise<string[]> {
    return this.inner.reapExpired(now);
  }
}
