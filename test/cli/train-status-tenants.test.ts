import { describe, expect, it } from 'vitest';
import { formatLineage } from '../../cli/operator-commands.js';
import { formatTrainedByTenant, trainedByTenantOf } from '../../cli/train-status.js';
import type { LineageEntry } from '../../workflows/training-signals.js';

// Group training as `train status` and `train lineage` show it: who shaped each version.
const entry = (version: number, sampleIds: string[], extra: Partial<LineageEntry> = {}): LineageEntry => ({
  version,
  stepId: `r:i:v${version}`,
  sampleIds,
  checkpoint: `/c/v${version}`,
  metrics: {},
  ...extra,
});

const lineage = [
  entry(1, ['alice/c:1', 'alice/c:2', 'bob/d:1', 'bob/d:2'], {
    tenants: { alice: 2, bob: 2 },
    heldBack: { alice: 2 },
    weights: { alice: 0.5 },
  }),
  // An entry from before tenants were counted in the lineage: counted from its sample ids.
  entry(2, ['alice/c:3', 'roll-1']),
  entry(3, ['alice/c:4', 'alice/c:5', 'carol/e:1', 'bob/d:3'], {
    tenants: { alice: 2, bob: 1, carol: 1 },
    heldBack: {},
  }),
];

describe('train status by tenant', () => {
  it('shows the totals and, per version newest first, who contributed and whom the cap held back', () => {
    expect(formatTrainedByTenant(trainedByTenantOf(lineage))).toBe(
      [
        'by tenant        alice 5, bob 3, - 1, carol 1 (samples of the last 3 versions)',
        '  v3              alice 2, bob 1, carol 1',
        '  v2              - 1, alice 1',
        '  v1              alice 2, bob 2 (held back: alice 2; weights: alice 0.5)',
      ].join('\n'),
    );
    expect(formatTrainedByTenant(trainedByTenantOf([]))).toBe('by tenant        nothing trained yet');
  });

  it('shows the last five versions one by one', () => {
    const many = Array.from({ length: 8 }, (_, i) => entry(i + 1, [`alice/c:${i}`]));
    const recent = trainedByTenantOf(many).recent ?? [];
    expect(recent.map((c) => c.version)).toEqual([8, 7, 6, 5, 4]);
  });

  it('puts the same per version in the lineage table', () => {
    const text = formatLineage(lineage);
    expect(text).toContain('alice 2, bob 2 (held back: alice 2; weights: alice 0.5)');
    expect(text.split('\n')[1]).toContain('v3');
  });
});
