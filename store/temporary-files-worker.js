// Writes a batch of temporary files on a thread of its own (temporary-files.ts says why). Plain JavaScript: a
// worker thread may start without the TypeScript loader the rest of the process runs under (it does under
// vitest).

import { randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, openSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

/** @typedef {{ id: number, files: { path: string, text: string }[], sync: boolean }} WriteRequest */

/** Writes `text` to a new file beside `path`, fsync'd when `sync`; returns its name. */
function writeOne(/** @type {string} */ path, /** @type {string} */ text, /** @type {boolean} */ sync) {
  const temp = `${path}.${randomUUID()}.tmp`;
  const fd = openSync(temp, 'wx');
  try {
    const data = Buffer.from(text, 'utf8');
    for (let offset = 0; offset < data.length; ) offset += writeSync(fd, data, offset);
    if (sync) fsyncSync(fd);
  } catch (error) {
    try {
      closeSync(fd);
      unlinkSync(temp);
    } catch {}
    throw error;
  }
  closeSync(fd);
  return temp;
}

// Named, so that `ps -L`, `top -H` and the profile bench tell this thread from V8's and libuv's (Linux only;
// elsewhere it keeps the process's name).
try {
  writeFileSync('/proc/thread-self/comm', 'store-files');
} catch {
  // no /proc here
}

if (!parentPort) throw new Error('temporary-files-worker.js runs as a worker thread');
const port = parentPort;

port.on('message', (/** @type {WriteRequest} */ request) => {
  /** @type {string[]} */
  const temps = [];
  try {
    for (const file of request.files) temps.push(writeOne(file.path, file.text, request.sync));
    port.postMessage({ id: request.id, temps });
  } catch (error) {
    // A batch is written whole or not at all: what it wrote so far goes.
    for (const temp of temps) {
      try {
        unlinkSync(temp);
      } catch {}
    }
    const caught = /** @type {NodeJS.ErrnoException} */ (error);
    port.postMessage({
      id: request.id,
      error: { message: String(caught?.message ?? caught), code: caught?.code },
    });
  }
});
