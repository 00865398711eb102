// The training loop of one run (`training-<runId>`): collects scored samples, trains a step whenever a batch
// of usable samples is full, publishes the new weights to the serving engine (policy version + 1), records
// which samples made which version, and continues-as-new every few steps, and while it waits once its history
// grows (a run that only receives exclusions, or a paused one). Samples are references; the token arrays stay
// in the sample store, and waiting references beyond a bound are spilled there too, so the carried state stays
// small. The samples that make the trainer refuse a batch become exclusions, the rest train, and the run goes on.

import { ApplicationFailure, patched } from '@temporalio/workflow';
import { describeZodError, trainingInputSchema } from '../core/training-settings.js';
import { trainBeforeIncarnations } from './training-before-incarnations.js';
import { TrainingRun } from './training-run.js';
import type { TrainingInput } from './training-signals.js';

/**
 * The version of this workflow's behaviour that runs started before it replay without: incarnations, the
 * continue-as-new while waiting, the spilled backlog and refusals as exclusions.
 */
const SIGNAL_V2 = 'training-signal-v2';
/** Samples of another incarnation (or of a version above the run's) are off-policy. */
const OFF_POLICY_INCARNATIONS = 'training-off-policy-incarnations';
/** A refused batch is split so only the samples that cause the refusal become exclusions. */
const ISOLATE_REFUSALS = 'training-isolate-refusals';
/** A later scoring of a turn (explicit feedback) replaces its sample while it waits. */
const FEEDBACK_AMENDMENTS = 'training-feedback-amendments';
/** Group training: a cap per tenant per batch, and loss weights per tenant. */
const TENANT_CAPS = 'training-tenant-caps';
/** The publish gate, rollback, `publishedAt` in lineage, and staleness counted from the served version. */
const PUBLISH_GATE = 'training-publish-gate';

export async function trainingWorkflow(rawInput: TrainingInput): Promise<void> {
  const parsed = trainingInputSchema.safeParse(rawInput);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `invalid training input: ${describeZodError(parsed.error)}`,
      'InvalidInput',
    );
  }
  const incarnations = patched(SIGNAL_V2);
  const run = new TrainingRun(parsed.data, rawInput.carried, {
    incarnations,
    offPolicyIncarnations: incarnations && patched(OFF_POLICY_INCARNATIONS),
    isolateRefusals: incarnations && patched(ISOLATE_REFUSALS),
    amendments: incarnations && patched(FEEDBACK_AMENDMENTS),
    tenantCaps: incarnations && patched(TENANT_CAPS),
    publishGate: incarnations && patched(PUBLISH_GATE),
  });
  run.registerHandlers();
  if (!incarnations) return trainBeforeIncarnations(run);
  // After the handlers: a pause or a sample sent with the start must find them in the first activation.
  await run.beginIncarnation();
  for (;;) {
    if (!(await run.waitForBatch())) continue;
    if (await run.dropStaleSamples()) continue;
    const step = run.planStep();
    const published = await run.trainStep(step);
    if (published === null) continue;
    await run.recordStep(step, published);
    await run.continueAsNewIfDue();
  }
}
