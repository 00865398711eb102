// How a session hands a turn to scoring: a child workflow per turn, abandoned (scoring outlives the session
// run when it continues-as-new or closes) and under the turn's own id with reject-duplicate, so no turn is
// scored twice, whichever run or delivery asks.

import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ParentClosePolicy, startChild, WorkflowIdReusePolicy } from '@temporalio/workflow';
import { scoreTurnWorkflowId } from '../temporal/workflow-ids.js';
import { amendedSampleId, type ScoreTurnInput, scoreTurnWorkflow } from './score-turn-workflow.js';

/** Starts scoring `input.turn`; false when it was scored already (the first scoring stands). */
export async function startScoreTurn(input: ScoreTurnInput): Promise<boolean> {
  try {
    await startChild(scoreTurnWorkflow, {
      // A later scoring of the same turn (feedback) has an id of its own: one per piece of feedback.
      workflowId: scoreTurnWorkflowId(
        input.amendment === undefined
          ? input.turn.sampleId
          : amendedSampleId(input.turn.sampleId, input.amendment.key),
      ),
      args: [input],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
    return true;
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}
