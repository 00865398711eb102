// TensorBoard event files for training runs: `tensorboard --logdir <dataDir>/tensorboard` plots each run's
// scalars (loss, reward, KL, step and publish times) by step. Written by hand: the format is small and no
// maintained npm package writes it (docs/dependencies.md). An event file is a sequence of TFRecords
// (uint64 length, masked CRC32C of the length, data, masked CRC32C of the data) holding `Event` protos;
// the first event names the file version. Each host appends to a file of its own under the run's folder.

import { appendFile, mkdir, readdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

const runIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._~-]{1,200}$/, 'a run id: letters, digits, ".", "_", "~", "-"')
  .refine((id) => id !== '.' && id !== '..', 'a run id names a folder under the log folder');
// NaN and infinities are kept: a diverged loss is worth seeing (TensorBoard plots them).
const scalarsSchema = z.record(
  z.string().min(1),
  z.custom<number>((value) => typeof value === 'number', 'a number'),
);

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32c(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = (CRC32C_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** TFRecord's masking, so a CRC of data that itself holds CRCs stays informative. */
function maskedCrc(data: Uint8Array): number {
  const crc = crc32c(data);
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

function varint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return out;
}

function lengthDelimited(field: number, bytes: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([(field << 3) | 2, ...varint(bytes.length)]), bytes]);
}

/** Summary.Value { tag = 1; simple_value = 2 (float) }. */
function summaryValue(tag: string, value: number): Buffer {
  const float = Buffer.alloc(5);
  float[0] = (2 << 3) | 5;
  float.writeFloatLE(value, 1);
  return Buffer.concat([lengthDelimited(1, Buffer.from(tag, 'utf8')), float]);
}

/** Event { wall_time = 1 (double); step = 2 (int64); file_version = 3 | summary = 5 }. */
function event(
  wallTimeSec: number,
  step: number,
  body: { fileVersion: string } | { scalars: Record<string, number> },
): Buffer {
  const wallTime = Buffer.alloc(9);
  wallTime[0] = (1 << 3) | 1;
  wallTime.writeDoubleLE(wallTimeSec, 1);
  const stepField = Buffer.from([2 << 3, ...varint(step)]);
  const rest =
    'fileVersion' in body
      ? lengthDelimited(3, Buffer.from(body.fileVersion, 'utf8'))
      : lengthDelimited(
          5,
          Buffer.concat(
            Object.entries(body.scalars).map(([tag, value]) => lengthDelimited(1, summaryValue(tag, value))),
          ),
        );
  return Buffer.concat([wallTime, stepField, rest]);
}

/** One TFRecord around `data`. */
export function tfRecord(data: Uint8Array): Buffer {
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(data.length));
  const crcs = Buffer.alloc(8);
  crcs.writeUInt32LE(maskedCrc(length), 0);
  crcs.writeUInt32LE(maskedCrc(data), 4);
  return Buffer.concat([length, crcs.subarray(0, 4), data, crcs.subarray(4)]);
}

const host = hostname().replace(/[^A-Za-z0-9.-]/g, '-') || 'host';

/** This host's event file of the run, made (with its file-version event) when there is none. */
async function eventFile(dir: string, wallTimeSec: number): Promise<string> {
  await mkdir(dir, { recursive: true });
  const suffix = `.${host}`;
  const existing = (await readdir(dir)).filter(
    (name) => name.startsWith('events.out.tfevents.') && name.endsWith(suffix),
  );
  const newest = existing.sort().at(-1);
  if (newest) return join(dir, newest);
  const path = join(dir, `events.out.tfevents.${String(Math.floor(wallTimeSec)).padStart(10, '0')}${suffix}`);
  await appendFile(path, tfRecord(event(wallTimeSec, 0, { fileVersion: 'brain.Event:2' })));
  return path;
}

/**
 * Appends `scalars` at `step` to the run's event file under `<logDir>/<runId>/`, one record written at once
 * (O_APPEND), so a crash leaves whole records and a reader skips nothing.
 */
export async function writeRunScalars(
  logDir: string,
  runId: string,
  step: number,
  scalars: Record<string, number>,
  wallTimeSec: number,
): Promise<void> {
  const run = runIdSchema.parse(runId);
  const values = scalarsSchema.parse(scalars);
  if (!Number.isSafeInteger(step) || step < 0)
    throw new Error(`step must be a non-negative integer, got ${step}`);
  if (Object.keys(values).length === 0) return;
  const path = await eventFile(join(logDir, run), wallTimeSec);
  await appendFile(path, tfRecord(event(wallTimeSec, step, { scalars: values })));
}
