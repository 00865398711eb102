// The turn journal's appends and fdatasyncs, on a thread of their own (journal-syncer.ts says why). Plain
// JavaScript: a worker thread may start without the TypeScript loader the rest of the process runs under (it
// does under vitest).

import { fdatasyncSync, writeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

/** [0]: the number of the last request finished; [1]: 1 when it failed (written before [0]). */
const done = new Int32Array(/** @type {{ done: SharedArrayBuffer }} */ (workerData).done);

parentPort?.on('message', (/** @type {{ seq: number, fd: number, text: string }} */ request) => {
  /** @type {{ message: string, code: string | undefined } | null} */
  let failure = null;
  try {
    const data = Buffer.from(request.text, 'utf8');
    for (let offset = 0; offset < data.length; ) offset += writeSync(request.fd, data, offset);
    fdatasyncSync(request.fd);
  } catch (error) {
    const caught = /** @type {NodeJS.ErrnoException} */ (error);
    failure = { message: String(caught?.message ?? caught), code: caught?.code };
  }
  Atomics.store(done, 1, failure ? 1 : 0);
  Atomics.store(done, 0, request.seq);
  parentPort?.postMessage({ seq: request.seq, failure });
});
