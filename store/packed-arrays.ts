// Long arrays of numbers (prompt and response token ids, log-probs, advantages) packed as binary beside the
// rest of a record, for the PostgreSQL store: a 50k-token prompt is 200 KB of int32 instead of ~300 KB of JSON
// text that the database would parse and validate. Lossless: integers that fit int32 are stored as int32, any
// other finite numbers as float64 (a JavaScript number exactly; -0 comes back as 0, as from JSON); arrays
// holding anything else stay in the JSON.
// The JSON document keeps `null` where an array was taken out, and the binary part says where each goes.
//
// Binary layout (little-endian): u32 count, then per array: u32 path length, path (UTF-8 JSON array of keys
// and indices), u8 kind (1 int32, 2 float64), u32 element count, the elements.

import { endianness } from 'node:os';

/** Arrays shorter than this stay in the JSON document: packing them saves nothing worth a lookup. */
export const PACK_MIN_LENGTH = 32;

const INT32 = 1;
const FLOAT64 = 2;

type Path = (string | number)[];

interface Packed {
  path: Path;
  kind: typeof INT32 | typeof FLOAT64;
  values: number[];
}

export interface PackedRecord {
  /** The record as JSON text, with `null` where arrays were taken out. */
  json: string;
  /** The arrays taken out, or null when there were none. */
  arrays: Buffer | null;
}

function packableKind(values: unknown[]): Packed['kind'] | null {
  if (values.length < PACK_MIN_LENGTH) return null;
  let integers = true;
  for (const value of values) {
    if (typeof value !== 'number' || !Number.isFinite(value)) return null;
    if (integers && !(Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31)) integers = false;
  }
  return integers ? INT32 : FLOAT64;
}

/** Splits `value` into JSON text and packed arrays. `value` is not modified. */
export function packRecord(value: unknown): PackedRecord {
  const packed: Packed[] = [];
  const path: Path = [];
  // A copy with the arrays replaced; JSON.stringify then treats undefined and toJSON as it always does.
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) {
      const kind = packableKind(node);
      if (kind !== null) {
        packed.push({ path: [...path], kind, values: node as number[] });
        return null;
      }
      return node.map((item, index) => {
        path.push(index);
        const out = strip(item);
        path.pop();
        return out;
      });
    }
    if (node !== null && typeof node === 'object') {
      if (typeof (node as { toJSON?: unknown }).toJSON === 'function') return node;
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(node)) {
        path.push(key);
        out[key] = strip(child);
        path.pop();
      }
      return out;
    }
    return node;
  };
  const json = JSON.stringify(strip(value));
  return { json, arrays: packed.length === 0 ? null : encode(packed) };
}

/** The record `packRecord` split, whole again. `doc` is the parsed JSON part (modified in place). */
export function unpackRecord(doc: unknown, arrays: Buffer | null): unknown {
  if (arrays === null) return doc;
  let root = doc;
  for (const { path, values } of decode(arrays)) {
    if (path.length === 0) {
      root = values;
      continue;
    }
    let parent = root as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    parent[path[path.length - 1] as string | number] = values;
  }
  return root;
}

const LITTLE_ENDIAN = endianness() === 'LE';

/** Big-endian machines store the same little-endian bytes: typed arrays use the machine's order. */
function swapBytes(typed: Int32Array | Float64Array): void {
  new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength).reverse();
  typed.reverse();
}

function encode(packed: Packed[]): Buffer {
  const paths = packed.map((p) => Buffer.from(JSON.stringify(p.path), 'utf8'));
  let size = 4;
  packed.forEach((p, i) => {
    size += 4 + (paths[i]?.length ?? 0) + 1 + 4 + p.values.length * (p.kind === INT32 ? 4 : 8);
  });
  const out = Buffer.allocUnsafe(size);
  let offset = out.writeUInt32LE(packed.length, 0);
  packed.forEach((p, i) => {
    const pathBytes = paths[i] as Buffer;
    offset = out.writeUInt32LE(pathBytes.length, offset);
    offset += pathBytes.copy(out, offset);
    offset = out.writeUInt8(p.kind, offset);
    offset = out.writeUInt32LE(p.values.length, offset);
    // -0 becomes 0, as it does in JSON text: both stores give back the same numbers.
    const typed = p.kind === INT32 ? Int32Array.from(p.values) : Float64Array.from(p.values, (v) => v || 0);
    if (!LITTLE_ENDIAN) swapBytes(typed);
    offset += Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength).copy(out, offset);
  });
  return out;
}

function decode(buffer: Buffer): Packed[] {
  const out: Packed[] = [];
  let offset = 0;
  const count = buffer.readUInt32LE(offset);
  offset += 4;
  for (let i = 0; i < count; i++) {
    const pathLength = buffer.readUInt32LE(offset);
    offset += 4;
    const path = JSON.parse(buffer.toString('utf8', offset, offset + pathLength)) as Path;
    offset += pathLength;
    const kind = buffer.readUInt8(offset) as Packed['kind'];
    offset += 1;
    const length = buffer.readUInt32LE(offset);
    offset += 4;
    if (kind !== INT32 && kind !== FLOAT64) throw new Error(`packed arrays: unknown element kind ${kind}`);
    const width = kind === INT32 ? 4 : 8;
    // Copied out, so the typed array starts aligned whatever the offset in the row's buffer.
    const bytes = new Uint8Array(buffer.subarray(offset, offset + length * width));
    offset += length * width;
    const typed = kind === INT32 ? new Int32Array(bytes.buffer) : new Float64Array(bytes.buffer);
    if (!LITTLE_ENDIAN) swapBytes(typed);
    out.push({ path, kind, values: Array.from(typed) });
  }
  return out;
}
