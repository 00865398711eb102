// The benchmark's clients in a process of their own, as real clients are: requests sent from the benchmark's
// own process share its event loop with the gateways it measures (they run in that process), and a client's
// JSON and HTTP work then counts as the gateway's (about a third of that loop's time at concurrency 8 in
// the ingestion benchmark); from a process of their own they still share the machine's cores. The child
// (client-process-main.ts) runs each block's lanes concurrently, every lane's requests one after another, and
// sends back every request's timing.

import { type ChildProcess, fork } from 'node:child_process';
import type { ChatTiming, PlannedChat } from './chat-client.js';

/** What the parent sends: lanes of requests, run concurrently, each lane's in order. */
export interface ClientBlock {
  id: number;
  lanes: PlannedChat[][];
}

/** What the child answers: each lane's timings, in its requests' order, or why the block failed. */
export interface ClientBlockResult {
  id: number;
  lanes?: ChatTiming[][];
  error?: string;
}

const CHILD_URL = new URL('./client-process-main.ts', import.meta.url);

export class ClientProcess {
  private nextId = 0;
  private readonly waiting = new Map<
    number,
    { resolve(lanes: ChatTiming[][]): void; reject(e: Error): void }
  >();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: ClientBlockResult) => {
      const waiter = this.waiting.get(message.id);
      if (!waiter) return;
      this.waiting.delete(message.id);
      if (message.lanes) waiter.resolve(message.lanes);
      else waiter.reject(new Error(message.error ?? 'the client process failed the block'));
    });
    child.on('exit', (code) => {
      for (const waiter of this.waiting.values())
        waiter.reject(new Error(`the client process exited (${code}) with a block in flight`));
      this.waiting.clear();
    });
  }

  /** Starts the child (through tsx, as the benchmark itself runs) and waits until it is ready. */
  static async start(): Promise<ClientProcess> {
    const child = fork(CHILD_URL, {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('error', reject);
      child.once('exit', (code) =>
        reject(new Error(`the client process exited (${code}) before it was ready`)),
      );
    });
    return new ClientProcess(child);
  }

  /** Runs the lanes concurrently in the child; resolves with each lane's timings. */
  run(lanes: PlannedChat[][]): Promise<ChatTiming[][]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ id, lanes } satisfies ClientBlock);
    });
  }

  close(): void {
    this.child.kill();
  }
}
