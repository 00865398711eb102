// One typed start per workflow a client starts: the workflow's type name is written once here (the worker
// registers workflows/index.ts, whose exports carry these names), and its arguments are checked against the
// signature declared beside its signals, so no client imports workflow code and none starts one by a bare string.
// "Already started" is success where a start is idempotent by its deterministic id.
import { type Client, WorkflowExecutionAlreadyStartedError, type WorkflowHandle } from '@temporalio/client';
import type { FeedbackNote } from '../core/feedback.js';
import type { TurnRef } from '../core/types.js';
import type { OutboxMessage } from '../store/outbox.js';
import type {
  AgenticTrainingInput,
  AgenticTrainingWorkflow,
  EnvRolloutInput,
  EnvRolloutResult,
  EnvRolloutWorkflow,
} from '../workflows/agentic-signals.js';
import {
  feedbackSignal,
  type SessionInput,
  type SessionWorkflow,
  sessionDoneSignal,
  turnRecordedSignal,
} from '../workflows/session-signals.js';
import {
  type SampleDelivery,
  sampleScoredSignal,
  type TrainingInput,
  type TrainingWorkflow,
} from '../workflows/training-signals.js';
import {
  agenticWorkflowId,
  envRolloutWorkflowId,
  sessionWorkflowId,
  trainingWorkflowId,
} from './workflow-ids.js';

/** The workflow type names, as workflows/index.ts exports them (test/temporal checks the two agree). */
export const WORKFLOW_TYPES = {
  session: 'sessionWorkflow',
  scoreTurn: 'scoreTurnWorkflow',
  training: 'trainingWorkflow',
  agenticTraining: 'agenticTrainingWorkflow',
  rolloutBatch: 'rolloutBatchWorkflow',
  envRollout: 'envRolloutWorkflow',
} as const;

/** Signal-with-start of `session-<sessionId>`: starts the session when it is not running, then delivers. */
export async function signalWithStartSession(
  client: Client,
  session: { sessionId: string; taskQueue: string; input: SessionInput },
  message: OutboxMessage,
): Promise<void> {
  const start = {
    workflowId: sessionWorkflowId(session.sessionId),
    taskQueue: session.taskQueue,
    args: [session.input] as [SessionInput],
  };
  if (message.kind === 'turn') {
    await client.workflow.signalWithStart<SessionWorkflow, [TurnRef]>(WORKFLOW_TYPES.session, {
      ...start,
      signal: turnRecordedSignal,
      signalArgs: [message.ref],
    });
  } else if (message.kind === 'feedback') {
    await client.workflow.signalWithStart<SessionWorkflow, [FeedbackNote]>(WORKFLOW_TYPES.session, {
      ...start,
      signal: feedbackSignal,
      signalArgs: [message.note],
    });
  } else {
    await client.workflow.signalWithStart<SessionWorkflow, []>(WORKFLOW_TYPES.session, {
      ...start,
      signal: sessionDoneSignal,
      signalArgs: [],
    });
  }
}

/** Starts `training-<runId>`; a run already going is left as it is (`started: false`). */
export async function startTrainingRun(
  client: Client,
  taskQueue: string,
  input: TrainingInput,
): Promise<{ workflowId: string; started: boolean }> {
  const workflowId = trainingWorkflowId(input.runId);
  try {
    await client.workflow.start<TrainingWorkflow>(WORKFLOW_TYPES.training, {
      workflowId,
      taskQueue,
      args: [input],
    });
    return { workflowId, started: true };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { workflowId, started: false };
    throw error;
  }
}

/** Hands a scored turn to `training-<runId>`, starting the run with `input` when it does not exist yet. */
export async function signalWithStartTraining(
  client: Client,
  taskQueue: string,
  input: TrainingInput,
  delivery: SampleDelivery,
): Promise<void> {
  await client.workflow.signalWithStart<TrainingWorkflow, [SampleDelivery]>(WORKFLOW_TYPES.training, {
    workflowId: trainingWorkflowId(input.runId),
    taskQueue,
    args: [input],
    signal: sampleScoredSignal,
    signalArgs: [delivery],
  });
}

/** Starts `agentic-<runId>`; an already running run counts as success. */
export async function startAgenticRun(
  client: Client,
  taskQueue: string,
  input: AgenticTrainingInput,
): Promise<'started' | 'running'> {
  try {
    await client.workflow.start<AgenticTrainingWorkflow>(WORKFLOW_TYPES.agenticTraining, {
      taskQueue,
      workflowId: agenticWorkflowId(input.runId),
      args: [input],
    });
    return 'started';
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'running';
    throw error;
  }
}

/** Starts one rollout `rollout-<rolloutId>`; its handle's result is the rollout's. */
export function startEnvRollout(
  client: Client,
  taskQueue: string,
  input: EnvRolloutInput,
): Promise<WorkflowHandle<EnvRolloutWorkflow>> {
  return client.workflow.start<EnvRolloutWorkflow>(WORKFLOW_TYPES.envRollout, {
    taskQueue,
    workflowId: envRolloutWorkflowId(input.rolloutId),
    args: [input],
  });
}

/** Runs one rollout and waits for its result. */
export function executeEnvRollout(
  client: Client,
  taskQueue: string,
  input: EnvRolloutInput,
): Promise<EnvRolloutResult> {
  return client.workflow.execute<EnvRolloutWorkflow>(WORKFLOW_TYPES.envRollout, {
    taskQueue,
    workflowId: envRolloutWorkflowId(input.rolloutId),
    args: [input],
  });
}
