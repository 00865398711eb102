// Every workflow the control worker runs; the worker bundles this file.
import type { AgenticTrainingWorkflow, EnvRolloutWorkflow, RolloutBatchWorkflow } from './agentic-signals.js';
import type { agenticTrainingWorkflow } from './agentic-training-workflow.js';
import type { envRolloutWorkflow } from './env-rollout-workflow.js';
import type { rolloutBatchWorkflow } from './rollout-batch-workflow.js';
import type { SessionWorkflow } from './session-signals.js';
import type { sessionWorkflow } from './session-workflow.js';
import type { TrainingWorkflow } from './training-signals.js';
import type { trainingWorkflow } from './training-workflow.js';

export { agenticTrainingWorkflow } from './agentic-training-workflow.js';
export { envRolloutWorkflow } from './env-rollout-workflow.js';
export { rolloutBatchWorkflow } from './rollout-batch-workflow.js';
export { scoreTurnWorkflow } from './score-turn-workflow.js';
export { sessionWorkflow } from './session-workflow.js';
export { trainingWorkflow } from './training-workflow.js';

/** `Actual` must be usable as `Expected`: the check fails to compile otherwise. */
type Conforms<Actual extends Expected, Expected> = [Actual, Expected];

/**
 * Clients start workflows through the signatures in the `*-signals.ts` files (temporal/workflow-starts.ts), so
 * they never import workflow code; each workflow must keep to its signature, or this stops compiling.
 */
export type StartedSignatures = [
  Conforms<typeof sessionWorkflow, SessionWorkflow>,
  Conforms<typeof trainingWorkflow, TrainingWorkflow>,
  Conforms<typeof agenticTrainingWorkflow, AgenticTrainingWorkflow>,
  Conforms<typeof envRolloutWorkflow, EnvRolloutWorkflow>,
  Conforms<typeof rolloutBatchWorkflow, RolloutBatchWorkflow>,
];
