// The filesystem store's write-ahead journal for turns. A turn's record, its outbox entry and its index entries
// are four files, each written, fsync'd and named, and three directories fsync'd: dozens of file operations on
// Node's four I/O threads, which 32 concurrent turns queue behind. The journal makes the turn durable with one
// append and one fdatasync instead, shared by every turn that arrives while the previous append is syncing
// (group commit), and writes the files afterwards, off the serving path ("materializing"), a batch of lines at a
// time with their directory fsyncs shared (BatchMaterialize; their temporary files on a thread of the store's:
// temporary-files.ts). The append and its fdatasync run on a thread of their own (journal-syncer.ts), not
// behind the materializing writes on Node's shared I/O threads. Until a line is materialized, this process
// reads its values from memory; other processes see the files once they exist, and the outbox entry becomes
// deliverable only then.
//
// Segments: `<dir>/<owner>.<n>.log`, one open for appends; a segment is deleted once every line in it is
// materialized, and a new one is opened (made durable beforehand, in the background). After a crash (the
// owner is gone: journal-owner.ts), any process replays the segments' lines (`recoverJournals`): it first renames
// a segment to `<name>.<itself>.recovering` (of two recoverers exactly one wins), materializes each whole line in
// order (a torn last line was never acknowledged), and deletes the segment. Replaying a line twice is harmless:
// the record and the exact index entry are create-if-absent, and an outbox entry delivered twice is ignored.

import type { FileHandle } from 'node:fs/promises';
import { open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { DirectorySyncs } from './durable-file.js';
import { journalOwnerAlive, newJournalOwner } from './journal-owner.js';
import { JournalSyncer } from './journal-syncer.js';
import { type OutboxEntry, type OutboxStats, parseOutboxEntry } from './outbox.js';

/** Another key a line writes, after its value (the value's JSON text). */
export interface JournalWrite {
  key: string;
  text: string;
  ifAbsent: boolean;
}

/** One create-if-absent with what is written alongside it, as journaled: values as their JSON text. */
export interface JournalLine {
  key: string;
  text: string;
  outbox?: OutboxEntry;
  alongside: readonly JournalWrite[];
}

/** Writes a line's files durably; the record and `ifAbsent` keys are kept when present, the entry always added. */
export type Materialize = (line: JournalLine) => Promise<void>;

/** A line whose record has its name (its directory not synced yet): what names the rest of its files. */
export interface RecordedLine {
  /** Names the line's outbox entry and other keys (their directories not synced yet). */
  point(): Promise<void>;
  /** Drops what `point` would name: an earlier line of its session failed, and the line is written again later. */
  discard(): Promise<void>;
}

/**
 * Writes a batch of lines' files in two steps, with the directory fsyncs of each step shared by the batch rather
 * than made per line: `record` names each line's record (kept when present), `flush` makes durable every
 * directory named in since its last call. The journal records the batch, flushes, points, flushes: an entry or
 * index key is durable only after the record it points at, and a line leaves the journal only after both.
 */
export interface BatchMaterialize {
  record(line: JournalLine): Promise<RecordedLine>;
  flush(): Promise<void>;
}

/** A segment this big is closed for appends (it is deleted once its lines are materialized). */
const ROLL_BYTES = 8 * 2 ** 20;
/** Lines materialized at once (each is several file operations; the rest of the I/O threads stay free). */
const MATERIALIZE_CONCURRENCY = 2;
const RETRY_MS = 1_000;
/**
 * Materializing waits until no line was appended for this long (turns are being answered), or until the oldest
 * line waiting is `MATERIALIZE_WITHIN_MS` old: its file operations would otherwise queue ahead of the appends
 * of the turns answered next on the same four I/O threads, and its fsyncs ahead of their fdatasyncs on the
 * disk. A client's next turn commonly follows its answer within tens of milliseconds.
 */
const QUIET_MS = 50;
const MATERIALIZE_WITHIN_MS = 1_000;

const storedLineSchema = z.object({
  key: z.string().min(1),
  value: z.unknown(),
  outbox: z.unknown().optional(),
  alongside: z.array(z.object({ key: z.string().min(1), ifAbsent: z.boolean(), value: z.unknown() })),
});

const SEGMENT_NAME = /^([A-Za-z0-9~-]+)\.(\d+)\.log(?:\.([A-Za-z0-9~-]+)\.recovering)?$/;

/** The line as it is appended: values embedded as JSON (the text materialized is the same text). */
function lineText(line: JournalLine): string {
  const alongside = line.alongside.map(
    (write) => `{"key":${JSON.stringify(write.key)},"ifAbsent":${write.ifAbsent},"value":${write.text}}`,
  );
  const entry = line.outbox ? (({ position: _, ...stored }) => stored)(line.outbox) : undefined;
  const outbox = entry ? `,"outbox":${JSON.stringify(entry)}` : '';
  return `{"key":${JSON.stringify(line.key)},"value":${line.text}${outbox},"alongside":[${alongside.join(',')}]}\n`;
}

/** A line read back, or null when it is torn or not one this code wrote. */
function parseLine(text: string): JournalLine | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = storedLineSchema.safeParse(raw);
  if (!parsed.success) return null;
  const { key, value, outbox, alongside } = parsed.data;
  const entry = outbox === undefined ? null : parseOutboxEntry(outbox, '');
  if (outbox !== undefined && entry === null) return null;
  return {
    key,
    text: JSON.stringify(value),
    ...(entry && { outbox: (({ position: _, ...rest }) => rest)(entry) }),
    alongside: alongside.map((write) => ({
      key: write.key,
      ifAbsent: write.ifAbsent,
      text: JSON.stringify(write.value),
    })),
  };
}

class Segment {
  bytes = 0;
  /** Lines appended and not yet materialized. */
  outstanding = 0;
  sealed = false;
  constructor(
    readonly path: string,
    readonly handle: FileHandle,
  ) {}
}

interface PendingLine {
  line: JournalLine;
  /** performance.now() when its append was durable. */
  appendedAt: number;
  segment: Segment | null;
  group: string;
}

interface Waiting {
  text: string;
  pending: PendingLine;
  resolve(): void;
  reject(error: unknown): void;
}

export interface TurnJournalOptions {
  dir: string;
  materialize: BatchMaterialize;
  /** Makes `dir` durable in its parent (the store's durable directories). */
  ensureDir: (dir: string) => Promise<void>;
  syncs: DirectorySyncs;
  /** Told of a materialization that failed (it is tried again). */
  onError?: (error: unknown) => void;
}

export class TurnJournal {
  private readonly owner = newJournalOwner();
  private readonly syncer = new JournalSyncer();
  private segmentNumber = 0;
  private current: Segment | null = null;
  private spare: Promise<Segment> | null = null;
  private waiting: Waiting[] = [];
  /** A segment being opened for appends (what waits goes once it is). */
  private opening: Promise<void> | null = null;
  /** Batches handed to the sync thread and not yet durable. */
  private readonly writing = new Set<Promise<void>>();
  /** Values of lines not materialized yet, by key: reads and create-if-absent checks see them. */
  private readonly values = new Map<string, { text: string; pending: PendingLine; ifAbsent: boolean }>();
  /** Durable lines not yet materialized, in append order. */
  private queue: PendingLine[] = [];
  private materializing: Promise<void> | null = null;
  private rerun = false;
  private readonly retiring = new Set<Promise<void>>();
  private closed = false;
  private lastAppendAt = Number.NEGATIVE_INFINITY;
  /** Drains in progress: materializing does not wait for quiet then. */
  private draining = 0;

  constructor(private readonly options: TurnJournalOptions) {}

  /** fdatasyncs made so far: fewer than lines when turns arrive together. */
  get appends(): number {
    return this.syncer.syncs;
  }

  /** Hand-overs to the sync thread so far: one message each (a benchmark counts them per turn). */
  get handOvers(): number {
    return this.syncer.handOvers;
  }

  /** Appends the line; resolves once it is durable. Its values are readable here from the call on. */
  append(line: JournalLine): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    // The turns answered together pass by here: appends handed over earlier may be durable by now.
    this.syncer.poll();
    const pending: PendingLine = {
      line,
      appendedAt: 0,
      segment: null,
      group: line.outbox?.sessionId ?? line.key,
    };
    this.remember(pending);
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ text: lineText(line), pending, resolve, reject });
      this.kick();
    });
  }

  /**
   * The JSON text of a key written by a line not materialized yet, and whether that write keeps a value already
   * in the files (then the files' value, where there is one, is the key's).
   */
  pendingValue(key: string): { text: string; ifAbsent: boolean } | undefined {
    return this.values.get(key);
  }

  has(key: string): boolean {
    return this.values.has(key);
  }

  keys(): IterableIterator<string> {
    return this.values.keys();
  }

  /** Outbox entries durable here and not yet in the outbox folder. */
  pendingEntries(): OutboxStats {
    let depth = 0;
    let oldest: number | null = null;
    for (const pending of [...this.queue, ...this.waiting.map((waiting) => waiting.pending)]) {
      const entry = pending.line.outbox;
      if (!entry) continue;
      depth++;
      if (oldest === null || entry.createdAt < oldest) oldest = entry.createdAt;
    }
    return { depth, oldestCreatedAt: oldest };
  }

  /** Resolves once every line appended before the call is materialized. */
  async drain(): Promise<void> {
    this.draining++;
    try {
      await this.drainNow();
    } finally {
      this.draining--;
    }
  }

  private async drainNow(): Promise<void> {
    for (;;) {
      if (this.opening || this.writing.size > 0) await Promise.all([this.opening, ...this.writing]);
      else if (this.waiting.length > 0) this.kick();
      else if (this.queue.length > 0) {
        this.scheduleMaterialize();
        await this.materializing;
      } else {
        await Promise.all(this.retiring);
        return;
      }
    }
  }

  /** Materializes everything, then deletes the journal's segments. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.drain();
    this.closed = true;
    if (this.current) this.seal(this.current);
    const spare = this.spare;
    this.spare = null;
    if (spare) await spare.then((segment) => this.retire(segment)).catch(() => undefined);
    await Promise.all(this.retiring);
    await this.syncer.close();
    this.owner.release();
  }

  private remember(pending: PendingLine): void {
    const { line } = pending;
    this.values.set(line.key, { text: line.text, pending, ifAbsent: true });
    for (const write of line.alongside) {
      if (write.ifAbsent && this.values.has(write.key)) continue;
      this.values.set(write.key, { text: write.text, pending, ifAbsent: write.ifAbsent });
    }
  }

  private forget(pending: PendingLine): void {
    const { line } = pending;
    for (const key of [line.key, ...line.alongside.map((write) => write.key)])
      if (this.values.get(key)?.pending === pending) this.values.delete(key);
  }

  /**
   * Hands what is waiting to the sync thread: at once when a segment is open (appends made while an earlier one
   * syncs share the thread's next fdatasync), else once the next one is.
   */
  private kick(): void {
    if (this.waiting.length === 0 || this.opening) return;
    const segment = this.current;
    if (!segment) {
      this.openForAppends();
      return;
    }
    const batch = this.waiting;
    this.waiting = [];
    const data = batch.map((waiting) => waiting.text).join('');
    segment.bytes += Buffer.byteLength(data);
    segment.outstanding += batch.length;
    for (const waiting of batch) waiting.pending.segment = segment;
    // Sealed now, deleted only once these lines too are materialized.
    if (segment.bytes >= ROLL_BYTES) this.seal(segment);
    const written = this.syncer.appendAndSync(segment.handle.fd, segment.path, data).then(
      () => this.appended(batch),
      (error: unknown) => this.notAppended(segment, batch, error),
    );
    this.writing.add(written);
    void written.finally(() => this.writing.delete(written));
  }

  /** Opens the next segment, then hands over what waits; a segment that cannot be opened fails what waits. */
  private openForAppends(): void {
    const opening = this.segmentForAppend().then(
      () => undefined,
      (error: unknown) => {
        const batch = this.waiting;
        this.waiting = [];
        for (const waiting of batch) {
          this.forget(waiting.pending);
          waiting.reject(error);
        }
      },
    );
    this.opening = opening;
    void opening.finally(() => {
      this.opening = null;
      this.kick();
    });
  }

  /** A batch is durable: its lines resolve and wait to be materialized (batches end in append order). */
  private appended(batch: Waiting[]): void {
    const now = performance.now();
    this.lastAppendAt = now;
    for (const waiting of batch) {
      waiting.pending.appendedAt = now;
      this.queue.push(waiting.pending);
    }
    for (const waiting of batch) waiting.resolve();
    this.scheduleMaterialize();
  }

  private notAppended(segment: Segment, batch: Waiting[], error: unknown): void {
    segment.outstanding -= batch.length;
    // The segment may end in part of this batch now: nothing more is appended to it (the sync thread refuses
    // the appends already handed over too).
    if (!segment.sealed) this.seal(segment);
    else if (segment.outstanding === 0) this.retire(segment);
    for (const waiting of batch) {
      this.forget(waiting.pending);
      waiting.reject(error);
    }
  }

  private async segmentForAppend(): Promise<Segment> {
    if (this.current) return this.current;
    const next = this.spare ?? this.newSegment();
    this.spare = null;
    const segment = await next;
    this.current = segment;
    // The next one is made (and its name made durable) while this one takes appends.
    const spare = this.newSegment();
    spare.catch(() => {
      if (this.spare === spare) this.spare = null;
    });
    this.spare = spare;
    return segment;
  }

  private async newSegment(): Promise<Segment> {
    const { dir } = this.options;
    await this.options.ensureDir(dir);
    this.segmentNumber++;
    const path = join(dir, `${this.owner.id}.${String(this.segmentNumber).padStart(8, '0')}.log`);
    const handle = await open(path, 'wx');
    try {
      await this.options.syncs.sync(dir);
    } catch (error) {
      await handle.close();
      throw error;
    }
    return new Segment(path, handle);
  }

  /** No more appends to `segment`; deleted once its lines are materialized. */
  private seal(segment: Segment): void {
    segment.sealed = true;
    if (this.current === segment) this.current = null;
    if (segment.outstanding === 0) this.retire(segment);
  }

  private retire(segment: Segment): Promise<void> {
    const { dir, syncs } = this.options;
    const retiring = (async () => {
      await segment.handle.close().catch(() => undefined);
      await rm(segment.path, { force: true });
      // Durable too, so a power loss does not bring back lines that were materialized long ago.
      await syncs.sync(dir).catch(() => undefined);
    })();
    this.retiring.add(retiring);
    void retiring.finally(() => this.retiring.delete(retiring));
    return retiring;
  }

  private scheduleMaterialize(): void {
    if (this.materializing) {
      this.rerun = true;
      return;
    }
    this.materializing = this.materializeQueued().finally(() => {
      this.materializing = null;
      if (this.rerun) {
        this.rerun = false;
        if (this.queue.length > 0) this.scheduleMaterialize();
      }
    });
  }

  /**
   * Materializes the queued lines: a session's lines one after another in append order (its outbox entries
   * are named in that order), sessions side by side.
   */
  private async materializeQueued(): Promise<void> {
    while (this.queue.length > 0) {
      await this.quiet();
      const batch = this.queue.slice();
      const failed = !(await this.materializeBatch(batch));
      if (failed) await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
    // Idle: the segment in use is deleted too (a later append opens the spare), so a crash much later replays
    // nothing that was materialized long ago.
    const current = this.current;
    // (Its lines in flight count as outstanding.)
    if (current && current.outstanding === 0 && this.waiting.length === 0) this.seal(current);
  }

  /**
   * Writes a batch's files (BatchMaterialize): every record, one flush, every entry and index key, one flush. A
   * session's lines go in append order (its outbox entries are named in that order), sessions side by side; a
   * line that fails stops its session's later lines, which stay queued with it. True when every line was written.
   */
  private async materializeBatch(batch: readonly PendingLine[]): Promise<boolean> {
    const { materialize, onError } = this.options;
    let failed = false;
    const fail = (error: unknown) => {
      failed = true;
      onError?.(error);
    };
    const groups = new Map<string, PendingLine[]>();
    for (const pending of batch) {
      const group = groups.get(pending.group);
      if (group) group.push(pending);
      else groups.set(pending.group, [pending]);
    }
    const recorded = await inOrderBySession(
      [...groups.values()],
      async (pending) => ({
        pending,
        rest: await materialize.record(pending.line),
      }),
      fail,
    );
    const discard = (lines: readonly { rest: RecordedLine }[]) =>
      Promise.all(lines.map(({ rest }) => rest.discard().catch(() => undefined)));
    try {
      await materialize.flush();
    } catch (error) {
      fail(error);
      await discard(recorded.flat());
      return false;
    }
    const pointed = await inOrderBySession(
      recorded,
      async (line) => {
        await line.rest.point();
        return line.pending;
      },
      fail,
      discard,
    );
    try {
      await materialize.flush();
    } catch (error) {
      // Written again next time (a record and an exact index entry are kept, an entry twice is ignored).
      fail(error);
      return false;
    }
    for (const pending of pointed.flat()) this.done(pending);
    return !failed;
  }

  /** Resolves once appends have paused (or the oldest line has waited long enough, or a drain asks). */
  private async quiet(): Promise<void> {
    for (;;) {
      const now = performance.now();
      const oldest = this.queue[0]?.appendedAt ?? now;
      const quietFor = now - this.lastAppendAt;
      if (this.draining > 0 || quietFor >= QUIET_MS || now - oldest >= MATERIALIZE_WITHIN_MS) return;
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(QUIET_MS - quietFor, MATERIALIZE_WITHIN_MS - (now - oldest)) + 1),
      );
    }
  }

  private done(pending: PendingLine): void {
    this.forget(pending);
    this.queue = this.queue.filter((queued) => queued !== pending);
    const segment = pending.segment;
    if (!segment) return;
    segment.outstanding--;
    if (segment.sealed && segment.outstanding === 0) this.retire(segment);
  }
}

/**
 * Runs `step` over each list's items in order, `MATERIALIZE_CONCURRENCY` lists at a time; a list stops at its
 * first failure (told to `fail`), and `skipped` gets the items it did not reach. The results, list by list.
 */
async function inOrderBySession<T, R>(
  lists: readonly (readonly T[])[],
  step: (item: T) => Promise<R>,
  fail: (error: unknown) => void,
  skipped: (items: readonly T[]) => Promise<unknown> = async () => undefined,
): Promise<R[][]> {
  const results: R[][] = lists.map(() => []);
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < lists.length; index = next++) {
      const list = lists[index] as readonly T[];
      const done = results[index] as R[];
      for (const [i, item] of list.entries()) {
        try {
          done.push(await step(item));
        } catch (error) {
          fail(error);
          await skipped(list.slice(i + 1));
          break; // the session's later lines wait for this one
        }
      }
    }
  };
  await Promise.all(Array.from({ length: MATERIALIZE_CONCURRENCY }, worker));
  return results;
}

/**
 * The keys of the lines in every segment of `dir` now (whoever writes them, materialized or not): what a reader
 * in another process waits for before it expects to find them in the files.
 */
export async function journaledKeys(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const keys: string[] = [];
  for (const name of names) {
    if (!SEGMENT_NAME.test(name)) continue;
    let text: string;
    try {
      text = await readFile(join(dir, name), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // deleted meanwhile: written
      throw error;
    }
    for (const line of text.split('\n')) {
      const parsed = line === '' ? null : parseLine(line);
      if (parsed) keys.push(parsed.key);
    }
  }
  return keys;
}

/**
 * Replays the segments of journals whose writers are gone, in each owner's order; returns the lines
 * materialized. Safe to run from several processes at once.
 */
export async function recoverJournals(
  dir: string,
  materialize: Materialize,
  syncs: DirectorySyncs,
  alive: (owner: string) => boolean = journalOwnerAlive,
): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  const orphans = names
    .map((name) => ({ name, match: SEGMENT_NAME.exec(name) }))
    .filter(({ match }) => match !== null && !alive((match[3] ?? match[1]) as string))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  if (orphans.length === 0) return 0;
  const me = newJournalOwner();
  let replayed = 0;
  try {
    for (const { name, match } of orphans) {
      const claimed = join(dir, `${match?.[1]}.${match?.[2]}.log.${me.id}.recovering`);
      try {
        await rename(join(dir, name), claimed);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // another process took it
        throw error;
      }
      const text = await readFile(claimed, 'utf8');
      for (const line of text.split('\n')) {
        if (line === '') continue;
        const parsed = parseLine(line);
        if (!parsed) continue; // torn by the crash: never acknowledged
        await materialize(parsed);
        replayed++;
      }
      await rm(claimed, { force: true });
      await syncs.sync(dir);
    }
  } finally {
    me.release();
  }
  return replayed;
}
