// The turn journal's appends and fdatasyncs, on a thread of their own (journal-syncer.ts says why). Plain
// JavaScript: a worker thread may start without the TypeScript loader the rest of the process runs under (it
// does under vitest).

import { fdatasyncSync, writeFileSync, writeSync } from 'node:fs';
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';

/** @typedef {{ seq: number, fd: number, file: string, text: string }} SyncRequest */
/** @typedef {{ seq: number, message: string, code: string | undefined }} Failure */

/** [0]: the number of the last request finished; [1]: how many failed so far (counted before [0] moves). */
const done = new Int32Array(/** @type {{ done: SharedArrayBuffer }} */ (workerData).done);
/** Files a write or fdatasync failed on: what reached their disk after that is unknown, so nothing more goes. */
const broken = new Map();
let failed = 0;
let syncs = 0;

/** @param {unknown} error */
function describe(error) {
  const caught = /** @type {NodeJS.ErrnoException} */ (error);
  return { message: String(caught?.message ?? caught), code: caught?.code };
}

/** Writes each file's requests in order and fdatasyncs each file once; returns the requests that failed. */
function writeAll(/** @type {SyncRequest[]} */ requests) {
  /** @type {Map<string, SyncRequest[]>} */
  const byFile = new Map();
  for (const request of requests) {
    const list = byFile.get(request.file);
    if (list) list.push(request);
    else byFile.set(request.file, [request]);
  }
  /** @type {Failure[]} */
  const failures = [];
  for (const [file, list] of byFile) {
    let failure = broken.get(file);
    if (!failure) {
      try {
        const fd = /** @type {SyncRequest} */ (list[0]).fd;
        const data = Buffer.from(list.map((request) => request.text).join(''), 'utf8');
        for (let offset = 0; offset < data.length; ) offset += writeSync(fd, data, offset);
        fdatasyncSync(fd);
        syncs++;
      } catch (error) {
        failure = describe(error);
        broken.set(file, failure);
      }
    }
    if (failure) for (const request of list) failures.push({ seq: request.seq, ...failure });
  }
  return failures;
}

// Named, so that `ps -L`, `top -H` and the profile bench tell this thread from V8's and libuv's (Linux only;
// elsewhere it keeps the process's name).
try {
  writeFileSync('/proc/thread-self/comm', 'journal-sync');
} catch {
  // no /proc here
}

if (!parentPort) throw new Error('journal-sync-worker.js runs as a worker thread');
const port = parentPort;

port.on('message', (/** @type {SyncRequest[]} */ first) => {
  // What arrived while the last fdatasync ran goes in this one.
  const requests = [...first];
  for (let next = receiveMessageOnPort(port); next; next = receiveMessageOnPort(port))
    requests.push(.../** @type {SyncRequest[]} */ (next.message));
  const failures = writeAll(requests);
  const last = /** @type {SyncRequest} */ (requests[requests.length - 1]).seq;
  failed += failures.length;
  Atomics.store(done, 1, failed);
  Atomics.store(done, 0, last);
  port.postMessage({ last, failures, syncs });
});
