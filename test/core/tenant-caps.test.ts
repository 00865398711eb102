import { describe, expect, it } from 'vitest';
import { formCappedBatch, tenantWeight, weightsUsed } from '../../core/tenant-caps.js';

const ref = (sampleId: string) => ({ sampleId });
const ids = (refs: { sampleId: string }[]) => refs.map((r) => r.sampleId);

describe('formCappedBatch', () => {
  it('takes the first batchSize when there is no cap', () => {
    const waiting = ['alice/1:1', 'alice/1:2', 'alice/1:3', 'bob/1:1'].map(ref);
    expect(formCappedBatch(waiting, 3, 0)).toEqual({ batch: waiting.slice(0, 3), heldBack: {} });
  });

  it('holds a tenant at the cap while others wait, keeping queue order', () => {
    const waiting = [
      'alice/1:1',
      'alice/1:2',
      'alice/1:3',
      'alice/1:4',
      'bob/1:1',
      'alice/1:5',
      'bob/1:2',
    ].map(ref);
    const { batch, heldBack } = formCappedBatch(waiting, 4, 2);
    expect(ids(batch)).toEqual(['alice/1:1', 'alice/1:2', 'bob/1:1', 'bob/1:2']);
    // alice 3 and 4 would have been in the batch without the cap.
    expect(heldBack).toEqual({ alice: 2 });
  });

  it('tops a short batch up with the oldest held-back samples when nobody else waits', () => {
    const later = formCappedBatch(
      ['alice/1:3', 'alice/1:4', 'alice/1:5', 'alice/1:6', 'bob/1:2'].map(ref),
      4,
      2,
    );
    expect(ids(later.batch)).toEqual(['alice/1:3', 'alice/1:4', 'alice/1:5', 'bob/1:2']);
    expect(later.heldBack).toEqual({ alice: 1 });
    const waiting = ['alice/1:1', 'alice/1:2', 'alice/1:3', 'bob/1:1', 'alice/1:4', 'alice/1:5'].map(ref);
    const { batch, heldBack } = formCappedBatch(waiting, 4, 2);
    expect(ids(batch)).toEqual(['alice/1:1', 'alice/1:2', 'alice/1:3', 'bob/1:1']);
    // The same batch as without the cap: nothing was held back.
    expect(heldBack).toEqual({});
    // Only one person talking: batches stay full.
    const alone = formCappedBatch(['alice/1:1', 'alice/1:2', 'alice/1:3', 'alice/1:4'].map(ref), 4, 1);
    expect(alone.batch).toHaveLength(4);
    expect(alone.heldBack).toEqual({});
  });

  it('counts Track 2 and pre-tenant samples under -', () => {
    const waiting = ['roll-1', 'roll-2', 'roll-3', 'carol/s:1'].map(ref);
    const { batch, heldBack } = formCappedBatch(waiting, 2, 1);
    expect(ids(batch)).toEqual(['roll-1', 'carol/s:1']);
    expect(heldBack).toEqual({ '-': 1 });
  });

  it('returns fewer than batchSize only when fewer wait', () => {
    expect(formCappedBatch([ref('alice/1:1')], 4, 2).batch).toHaveLength(1);
  });
});

describe('tenant weights', () => {
  it('weighs a sample by its tenant, 1 when unlisted', () => {
    expect(tenantWeight({ alice: 2 }, 'alice/s:1')).toBe(2);
    expect(tenantWeight({ alice: 2 }, 'bob/s:1')).toBe(1);
    expect(tenantWeight(undefined, 'bob/s:1')).toBe(1);
  });

  it('records the weights other than 1 of the tenants in a batch', () => {
    expect(weightsUsed({ alice: 0.5, bob: 1, carol: 3 }, { alice: 2, bob: 2 })).toEqual({ alice: 0.5 });
  });
});
