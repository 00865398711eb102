// The engine adapter contract against the real reference engine (strict, as every engine in tests).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import { makeTinyModel, startReferenceEngine } from '../../workers/reference-engine-process.js';
import { describeEngineContract } from './engine-contract.js';

describeEngineContract('reference', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'reference-contract-'));
  const [base, other] = await Promise.all([
    makeTinyModel(join(dir, 'base')),
    makeTinyModel(join(dir, 'other'), 1),
  ]);
  const engine = await startReferenceEngine({ model: base });
  return {
    adapter: new ReferenceAdapter(engine.url),
    model: 'tiny',
    baseWeights: base,
    otherWeights: other,
    async close() {
      await engine.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
});
