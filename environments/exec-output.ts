// Docker's multiplexed exec stream (no TTY): frames of an 8-byte header [stream, 0, 0, 0, size (uint32 BE)]
// followed by `size` bytes, stream 1 = stdout, 2 = stderr. This reader splits them into two capped buffers, so
// a command that prints gigabytes costs the worker at most the cap; the rest is counted and dropped.

const HEADER_BYTES = 8;
const STDOUT = 1;
const STDERR = 2;

/** One output stream, kept up to `capBytes`. */
class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  dropped = 0;

  constructor(private readonly capBytes: number) {}

  push(chunk: Buffer): void {
    const room = this.capBytes - this.kept;
    if (room <= 0) {
      this.dropped += chunk.length;
      return;
    }
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(part);
    this.kept += part.length;
    this.dropped += chunk.length - part.length;
  }

  /** The kept bytes as UTF-8, with a note saying how much was dropped. */
  text(): string {
    const text = Buffer.concat(this.chunks).toString('utf8');
    return this.dropped > 0 ? `${text}\n[output truncated: ${this.dropped} more bytes]` : text;
  }
}

/** Feed it the raw exec stream's chunks in order; read `stdout()`/`stderr()` at the end. */
export class ExecOutputDemuxer {
  private pending: Buffer = Buffer.alloc(0);
  private readonly out: CappedBuffer;
  private readonly err: CappedBuffer;

  constructor(capBytesPerStream: number) {
    this.out = new CappedBuffer(capBytesPerStream);
    this.err = new CappedBuffer(capBytesPerStream);
  }

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= HEADER_BYTES) {
      const stream = this.pending[0];
      const size = this.pending.readUInt32BE(4);
      if (this.pending.length < HEADER_BYTES + size) break;
      const payload = this.pending.subarray(HEADER_BYTES, HEADER_BYTES + size);
      if (stream === STDERR) this.err.push(payload);
      else if (stream === STDOUT) this.out.push(payload);
      this.pending = this.pending.subarray(HEADER_BYTES + size);
    }
  }

  stdout(): string {
    return this.out.text();
  }

  stderr(): string {
    return this.err.text();
  }
}
