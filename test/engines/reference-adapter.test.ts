// The engine adapter contract against the real reference engine (strict, as every engine in tests).

import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import { startReferenceEngine } from '../../engines/reference-engine-process.js';
import { describeEngineContract, tinyWeights } from '../contracts/engine-contract.js';

describeEngineContract('reference', async () => {
  const { base, other, remove } = await tinyWeights('reference-contract');
  const engine = await startReferenceEngine({ model: base });
  return {
    adapter: new ReferenceAdapter(engine.url),
    model: 'tiny',
    baseWeights: base,
    otherWeights: other,
    async close() {
      await engine.stop();
      await remove();
    },
  };
});
