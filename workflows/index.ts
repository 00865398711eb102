// Every workflow the control worker runs; the worker bundles this file.
export { agenticTrainingWorkflow } from './agentic-training-workflow.js';
export { envRolloutWorkflow } from './env-rollout-workflow.js';
export { rolloutBatchWorkflow } from './rollout-batch-workflow.js';
export { scoreTurnWorkflow } from './score-turn-workflow.js';
export { sessionWorkflow } from './session-workflow.js';
export { trainingWorkflow } from './training-workflow.js';
