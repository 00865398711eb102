import { describe, expect, it } from 'vitest';
import { RefusalIsolation } from '../../workflows/refusal-isolation.js';

/**
 * Runs the training loop's use of RefusalIsolation over a queue of sample ids against a trainer that refuses
 * a batch when `refuses` says so (naming nothing): what trained, in which steps, and what was excluded.
 */
function drain(ids: string[], batchSize: number, refuses: (batch: string[]) => boolean) {
  const queue = [...ids];
  const isolation = new RefusalIsolation(null);
  const steps: string[][] = [];
  const excluded: string[] = [];
  for (let calls = 0; queue.length > 0 && calls < 1000; calls++) {
    const batch = queue.slice(0, isolation.batchSize(batchSize));
    if (!refuses(batch)) {
      steps.push(batch);
      queue.splice(0, batch.length);
      isolation.trained(batch);
      continue;
    }
    const outcome = isolation.refused(batch, []);
    if ('exclude' in outcome) {
      excluded.push(...outcome.exclude);
      for (const id of outcome.exclude) queue.splice(queue.indexOf(id), 1);
    }
  }
  return { steps, excluded, carry: isolation.carry() };
}

describe('splitting a refused batch', () => {
  it('finds two poisoned samples of 16 and trains the other 14 in order', () => {
    const ids = Array.from({ length: 16 }, (_, i) => `s${i}`);
    const { steps, excluded, carry } = drain(
      ids,
      16,
      (batch) => batch.includes('s3') || batch.includes('s12'),
    );
    expect(excluded).toEqual(['s3', 's12']);
    expect(steps.flat()).toEqual(ids.filter((id) => id !== 's3' && id !== 's12'));
    expect(carry).toBeNull();
  });

  it('splits a batch that mixes temperatures (slime) into parts of one temperature, excluding none', () => {
    const temperature = (id: string) => (Number(id.slice(1)) % 3 === 0 ? 0.6 : 1);
    const ids = Array.from({ length: 8 }, (_, i) => `s${i}`);
    const { steps, excluded } = drain(ids, 8, (batch) => new Set(batch.map(temperature)).size > 1);
    expect(excluded).toEqual([]);
    expect(steps.flat()).toEqual(ids);
    for (const step of steps) expect(new Set(step.map(temperature)).size).toBe(1);
  });

  it('excludes the samples a refusal names and retries the rest of the batch whole', () => {
    const isolation = new RefusalIsolation(null);
    expect(isolation.refused(['a', 'b', 'c'], ['b', 'elsewhere'])).toEqual({ exclude: ['b'] });
    expect(isolation.batchSize(16)).toBe(2);
    isolation.trained(['a', 'c']);
    expect(isolation.batchSize(16)).toBe(16);
    expect(isolation.carry()).toBeNull();
  });
});

describe('the next part of a refused batch', () => {
  it('is named by its ids (a batch formed under a cap per tenant need not be the queue front)', () => {
    const isolation = new RefusalIsolation(null);
    expect(isolation.nextPart()).toBeNull();
    isolation.refused(['alice/c:1', 'alice/c:2', 'bob/d:1', 'bob/d:2'], []);
    expect(isolation.nextPart()).toEqual(['alice/c:1', 'alice/c:2']);
    isolation.trained(['alice/c:1', 'alice/c:2']);
    expect(isolation.nextPart()).toEqual(['bob/d:1', 'bob/d:2']);
    isolation.trained(['bob/d:1', 'bob/d:2']);
    expect(isolation.nextPart()).toBeNull();
  });
});
