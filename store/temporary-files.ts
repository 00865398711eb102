// Temporary files written on a thread of their own, a batch at a time. Each file written through Node's
// promises API is four trips through the four shared I/O threads (open, write, fsync, close), each of which
// takes the event loop's time to hand over and to take back, and wakes a thread: the files of the turns the
// journal materializes (four per turn) cost the gateway's event loop about 0.4 ms per turn that way at
// concurrency 8, beside the turns it serves. Here one message carries a turn's files, and the thread writes and
// fsyncs them with plain system calls.

import { Worker } from 'node:worker_threads';

/** A file to write: its final name (the temporary one is made beside it) and its text. */
export interface TemporaryFile {
  path: string;
  text: string;
}

interface Written {
  id: number;
  temps?: string[];
  error?: { message: string; code: string | undefined };
}

interface InFlight {
  resolve(temps: string[]): void;
  reject(error: Error): void;
}

const WORKER_URL = new URL('./temporary-files-worker.js', import.meta.url);

export class TemporaryFileWriter {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly inFlight = new Map<number, InFlight>();

  /**
   * Writes each file under a new temporary name beside its path (fsync'd when `sync`); resolves with those
   * names, in order. All or none: on failure, the files this call wrote are removed.
   */
  write(files: readonly TemporaryFile[], sync: boolean): Promise<string[]> {
    if (files.length === 0) return Promise.resolve([]);
    const worker = this.start();
    const id = ++this.nextId;
    return new Promise<string[]>((resolve, reject) => {
      this.inFlight.set(id, { resolve, reject });
      // Held while writes are out, so a process waiting for them does not exit.
      if (this.inFlight.size === 1) worker.ref();
      worker.postMessage({ id, files, sync });
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.fail(new Error('the store is closed'));
    await worker?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_URL);
    worker.on('message', (written: Written) => {
      const request = this.inFlight.get(written.id);
      if (!request) return;
      this.inFlight.delete(written.id);
      if (this.inFlight.size === 0) worker.unref();
      if (written.temps) request.resolve(written.temps);
      else request.reject(Object.assign(new Error(written.error?.message), { code: written.error?.code }));
    });
    const lost = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.fail(error);
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the temporary-file thread exited (${code})`)));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private fail(error: Error): void {
    const inFlight = [...this.inFlight.values()];
    this.inFlight.clear();
    for (const request of inFlight) request.reject(error);
  }
}
