// A workflow that runs a training step, a publish and a failing activity, for the worker metrics test.
import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';

interface MetricsTestActivities {
  trainStep(): Promise<string>;
  publishWeights(): Promise<string>;
  refuse(): Promise<string>;
}

const activities = proxyActivities<MetricsTestActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 1 },
});

export async function stepAndPublishWorkflow(): Promise<string> {
  await activities.trainStep();
  await activities.publishWeights();
  try {
    await activities.refuse();
  } catch {
    return 'done';
  }
  throw ApplicationFailure.nonRetryable('refuse should have failed');
}
