// The fan-out benchmark's baseline bundle: the real training and batch workflows, with a rollout workflow
// that does nothing (no activities) and completes at once. The batch starts its children by the workflow
// type `envRolloutWorkflow`, so the same tree, window and retries run around an empty rollout: what is left
// is the orchestrator's own cost of a child workflow, the floor any real rollout is measured against.

import type { EnvRolloutInput, EnvRolloutResult } from '../../workflows/agentic-signals.js';
import { failedRolloutResult } from '../../workflows/rollout-results.js';

export { agenticTrainingWorkflow } from '../../workflows/agentic-training-workflow.js';
export { rolloutBatchWorkflow } from '../../workflows/rollout-batch-workflow.js';

export async function envRolloutWorkflow(input: EnvRolloutInput): Promise<EnvRolloutResult> {
  return {
    ...failedRolloutResult(input.rolloutId, 'empty rollout (benchmark baseline)'),
    status: 'COMPLETED',
    reward: 1,
  };
}
