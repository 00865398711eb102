// The turn journal's appends and fdatasyncs, made on a thread of their own. On Node's four shared I/O threads an
// append queued behind the files being materialized and the outbox's reads, and each of its two steps (write,
// then fdatasync) waited for the event loop to come round, which at concurrency 32 is busy with the other turns
// answered in the same engine batch: an append and fdatasync that take 0.4 ms on the disk took 8 ms p50 that
// way. Here every append is handed to the thread as soon as it is made (those of one tick in one message);
// the thread writes what has arrived, fdatasyncs once for all of it, and takes what arrived meanwhile next, so
// the appends answered together share fdatasyncs without the next one waiting for the event loop to see the
// last one end (group commit on the thread). Its end is seen in shared words as soon as the loop passes by
// (the next turn's append, an HTTP event of the process: event-loop-passes.ts, the check phase after this
// poll), not only when its message is read.
// Durability is unchanged: an append resolves only after an fdatasync that began after its write returned.

import { Worker } from 'node:worker_threads';
import { atEventLoopPasses } from './event-loop-passes.js';

/** One append as the thread gets it. */
interface SyncRequest {
  seq: number;
  fd: number;
  /** Names the file across fd reuse: after a failure, its later appends fail too. */
  file: string;
  text: string;
}

interface Finished {
  /** Every request up to this one is finished. */
  last: number;
  failures: { seq: number; message: string; code: string | undefined }[];
  /** fdatasyncs the thread has made so far. */
  syncs: number;
}

interface InFlight {
  seq: number;
  resolve(): void;
  reject(error: Error): void;
}

/** How long the event loop looks for appends' ends before it leaves them to the thread's message. */
const WATCH_MS = 5;
/** A turn of the event loop this short did nothing else. */
const IDLE_TURN_MS = 0.05;

const WORKER_URL = new URL('./journal-sync-worker.js', import.meta.url);

/** Whether request `seq` is at or before `last`, across the counter's wrap. */
function finishedBy(seq: number, last: number): boolean {
  return ((last - seq) | 0) >= 0;
}

export class JournalSyncer {
  private worker: Worker | null = null;
  /** Stops the looks at the process's HTTP events. */
  private stopLooking: (() => void) | null = null;
  /** [0]: the number of the last request the thread finished; [1]: how many requests it failed so far. */
  private readonly done = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
  private seq = 0;
  /** performance.now() when the looks in progress began; null when none are. */
  private watchingSince: number | null = null;
  /** Requests handed over and not settled, in order. */
  private inFlight: InFlight[] = [];
  /** Requests made in this tick, handed over together at its end. */
  private outgoing: SyncRequest[] = [];
  /** Failures whose messages were read: while the thread reports more, only messages settle requests. */
  private failuresRead = 0;
  /** fdatasyncs the thread has made (fewer than appends when they arrive together). */
  syncs = 0;
  /** Messages handed to the thread so far: each wakes it when it sleeps (one per tick that appended). */
  handOvers = 0;

  /**
   * Writes `text` at the file's position and fdatasyncs it; resolves once both are done. Appends to one file
   * land in call order; once one of them failed, every later one to the same `file` fails too (what reached
   * the disk after a failed write or fdatasync is unknown).
   */
  appendAndSync(fd: number, file: string, text: string): Promise<void> {
    const worker = this.start();
    this.seq = (this.seq % 0x7fffffff) + 1;
    const seq = this.seq;
    return new Promise<void>((resolve, reject) => {
      this.inFlight.push({ seq, resolve, reject });
      if (this.outgoing.length === 0) queueMicrotask(() => this.handOver(worker));
      this.outgoing.push({ seq, fd, file, text });
    });
  }

  /** Settles the requests the thread has finished; cheap enough to call on every append. */
  poll(): void {
    if (this.inFlight.length === 0) return;
    const last = Atomics.load(this.done, 0);
    // Read after `last`: the thread counts a failure before it publishes the request's end.
    if (Atomics.load(this.done, 1) !== this.failuresRead) return;
    this.settle(last, null);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.stopLooking?.();
    this.stopLooking = null;
    this.outgoing = [];
    this.fail(new Error('the journal is closed'));
    await worker?.terminate();
  }

  private handOver(worker: Worker): void {
    const requests = this.outgoing;
    this.outgoing = [];
    if (requests.length === 0 || this.worker !== worker) return;
    // Held while requests are out, so a process waiting only for its turns to be durable does not exit.
    worker.ref();
    this.handOvers++;
    worker.postMessage(requests);
    this.watch();
  }

  /**
   * Looks once per turn of the event loop while requests are out and the loop is busy: at concurrency 32 the
   * thread's message waits behind the other turns' work (5 ms p50 measured), while a look in the check phase
   * comes after each batch of it. A loop with nothing else to do would spin here, taking a core from the
   * engine: it stops looking and waits for the message, as it does after a few milliseconds (a disk that
   * stalls does not keep the loop spinning).
   */
  private watch(): void {
    if (this.watchingSince !== null) return;
    const since = performance.now();
    this.watchingSince = since;
    let lastLook = since;
    const look = () => {
      this.poll();
      const now = performance.now();
      const idle = now - lastLook < IDLE_TURN_MS;
      lastLook = now;
      if (this.inFlight.length > 0 && this.worker && !idle && now - since < WATCH_MS) setImmediate(look);
      else this.watchingSince = null;
    };
    setImmediate(look);
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_URL, { workerData: { done: this.done.buffer } });
    worker.on('message', (finished: Finished) => {
      this.syncs = finished.syncs;
      this.failuresRead += finished.failures.length;
      this.settle(finished.last, new Map(finished.failures.map((failure) => [failure.seq, failure])));
    });
    const lost = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.outgoing = [];
      // Whether its last writes reached the disk is unknown: those turns are not acknowledged.
      this.fail(error);
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the journal's sync thread exited (${code})`)));
    worker.unref();
    this.worker = worker;
    this.stopLooking ??= atEventLoopPasses(() => this.poll());
    return worker;
  }

  /** Settles the requests up to `last`; `failures` null when none of them failed. */
  private settle(last: number, failures: Map<number, Finished['failures'][number]> | null): void {
    let settled = 0;
    while (settled < this.inFlight.length && finishedBy((this.inFlight[settled] as InFlight).seq, last))
      settled++;
    if (settled === 0) return;
    const finished = this.inFlight.slice(0, settled);
    this.inFlight = this.inFlight.slice(settled);
    if (this.inFlight.length === 0) this.worker?.unref();
    for (const request of finished) {
      const failure = failures?.get(request.seq);
      if (failure === undefined) request.resolve();
      else request.reject(Object.assign(new Error(failure.message), { code: failure.code }));
    }
  }

  private fail(error: Error): void {
    const inFlight = this.inFlight;
    this.inFlight = [];
    for (const request of inFlight) request.reject(error);
  }
}
