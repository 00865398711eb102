// Every workflow the control worker runs; the worker bundles this file.
export { scoreTurnWorkflow } from './score-turn-workflow.js';
export { sessionWorkflow } from './session-workflow.js';
export { trainingWorkflow } from './training-workflow.js';
