// The samples a training run waits with, in arrival order, without carrying them all through its history:
// `head` (the oldest, in memory), then `backlog` (chunks spilled to the sample store at continue-as-new), then
// `tail` (what arrived while there was a backlog). A run that is paused, or slower than its samples arrive,
// carries at most CARRIED_MAX references into its next execution; the rest wait in the store.
import type { TrainingActivities } from '../activities/training-activities.js';
import { backlogKey } from '../core/training-keys.js';
import type { SampleRef } from '../core/types.js';
import type { BacklogChunk, TrainingCarry } from './training-signals.js';

/** References carried over continue-as-new at most (a SampleRef is ~150 bytes in the history). */
export const CARRIED_MAX = 1_000;
/** References per spilled chunk: one activity input or result stays far below Temporal's 2 MB payload limit. */
export const CHUNK_MAX = 2_000;

type BacklogCalls = Pick<TrainingActivities, 'spillPending' | 'loadBacklog' | 'dropBacklog'>;
type QueueCarry = Pick<
  TrainingCarry,
  'pending' | 'backlog' | 'tail' | 'backlogSeq' | 'consumedBacklog' | 'backlogSamples'
>;

export class TrainingQueue {
  private head: SampleRef[];
  private backlog: BacklogChunk[];
  private tail: SampleRef[];
  private seq: number;
  private consumed: string[];

  constructor(carry: QueueCarry) {
    this.head = [...carry.pending];
    this.backlog = [...(carry.backlog ?? [])];
    this.tail = [...(carry.tail ?? [])];
    this.seq = carry.backlogSeq ?? 0;
    this.consumed = [...(carry.consumedBacklog ?? [])];
  }

  /** Every waiting sample, in memory or in the store. */
  get size(): number {
    return this.head.length + this.backlogSize + this.tail.length;
  }

  get backlogSize(): number {
    return this.backlog.reduce((n, chunk) => n + chunk.count, 0);
  }

  push(ref: SampleRef): void {
    (this.backlog.length > 0 ? this.tail : this.head).push(ref);
  }

  ready(batchSize: number): boolean {
    return this.head.length >= batchSize;
  }

  /** Whether older samples than the head's missing ones wait in the store or the tail. */
  needsRefill(batchSize: number): boolean {
    return this.head.length < batchSize && (this.backlog.length > 0 || this.tail.length > 0);
  }

  /** Brings the oldest chunk back from the store, or the tail once the backlog is empty. */
  async refill(calls: BacklogCalls): Promise<void> {
    const chunk = this.backlog[0];
    if (chunk === undefined) {
      this.head.push(...this.tail.splice(0));
      return;
    }
    const refs = await calls.loadBacklog({ key: chunk.key });
    this.backlog.shift();
    this.head.push(...refs);
    this.consumed.push(chunk.key);
  }

  /** The waiting samples in memory (the oldest), in order. */
  inMemory(): readonly SampleRef[] {
    return this.head;
  }

  peek(count: number): SampleRef[] {
    return this.head.slice(0, count);
  }

  take(count: number): void {
    this.head.splice(0, count);
  }

  /** Removes and returns the head's samples matching `predicate`. */
  removeWhere(predicate: (ref: SampleRef) => boolean): SampleRef[] {
    const removed = this.head.filter(predicate);
    if (removed.length > 0) this.head = this.head.filter((ref) => !predicate(ref));
    return removed;
  }

  /** Removes waiting samples matching `predicate` from the head and the tail (not from spilled chunks). */
  removeEverywhere(predicate: (ref: SampleRef) => boolean): void {
    this.removeWhere(predicate);
    if (this.tail.some(predicate)) this.tail = this.tail.filter((ref) => !predicate(ref));
  }

  /**
   * Before continue-as-new: everything beyond CARRIED_MAX references goes to the store (head's overflow before
   * the backlog, the tail after it), and chunks already read back are deleted; `carry()` then is small.
   */
  async spill(calls: BacklogCalls, runId: string, incarnation: string): Promise<void> {
    if (this.head.length + this.tail.length > CARRIED_MAX) {
      const front = await this.write(calls, runId, incarnation, this.head.splice(CARRIED_MAX));
      const back = await this.write(calls, runId, incarnation, this.tail.splice(0));
      this.backlog = [...front, ...this.backlog, ...back];
    }
    if (this.consumed.length > 0) {
      await calls.dropBacklog({ keys: this.consumed });
      this.consumed = [];
    }
  }

  carry(): QueueCarry {
    return {
      pending: [...this.head],
      backlog: [...this.backlog],
      tail: [...this.tail],
      backlogSeq: this.seq,
      consumedBacklog: [...this.consumed],
      backlogSamples: this.backlogSize,
    };
  }

  private async write(
    calls: BacklogCalls,
    runId: string,
    incarnation: string,
    refs: SampleRef[],
  ): Promise<BacklogChunk[]> {
    const chunks: BacklogChunk[] = [];
    for (let start = 0; start < refs.length; start += CHUNK_MAX) {
      const part = refs.slice(start, start + CHUNK_MAX);
      const key = backlogKey(runId, incarnation, this.seq++);
      await calls.spillPending({ key, refs: part });
      chunks.push({ key, count: part.length });
    }
    return chunks;
  }
}
