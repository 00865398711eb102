import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { loadHistories } from '../support/histories.js';
import { testEncryptionPlugin } from '../support/temporal.js';
import { testWorkflowBundle } from '../support/workflow-bundle.js';

// Recorded histories of every workflow replay against today's code: a change that would break running
// workflows (non-determinism) fails here. Refresh them with `RECORD_HISTORIES=1 npx vitest run test/workflows`
// only for a deliberate, versioned change.
describe('workflow replay', () => {
  it('replays every recorded history without a determinism error', async () => {
    const histories = await loadHistories();
    const names = histories.map((h) => h.name);
    const expectedNames = [
      'session-workflow-sequential',
      'session-workflow-kept-reply',
      'session-workflow-superseded',
      'session-workflow-reopened',
      'session-workflow-horizon',
      'session-workflow-late-signals',
      // Explicit feedback: a session whose turns are scored again, the amendment's scoring, and a run that
      // trains the amendments in place of the exclusions.
      'session-workflow-feedback',
      'score-turn-workflow-feedback-amendment',
      'training-workflow-feedback-amended',
      'score-turn-workflow-superseded',
      'score-turn-workflow-superseded-negative',
      'score-turn-workflow-opd-rl',
      'training-workflow',
      'training-workflow-trainer-queue',
      'training-workflow-incarnation',
      'training-workflow-refused-batch',
      // A refused batch split until only its poisoned sample is excluded (patched: the one above replays).
      'training-workflow-isolated-refusal',
      'training-workflow-spills-backlog',
      'training-workflow-loads-backlog',
      // Group training: a cap per tenant held some of one tenant's samples back for later batches.
      'training-workflow-tenant-caps',
      // The publish gate held two versions: evaluations between training and publishing (patched).
      'training-workflow-publish-gate',
      'env-rollout-workflow',
      'rollout-batch-workflow',
      'agentic-training-workflow',
      // The same workflows after a rollout became episode activities and batches kept their results in the
      // store; the three above are the step-by-step shape, which patched() keeps replaying.
      'env-rollout-workflow-episode',
      'rollout-batch-workflow-results-in-store',
      'agentic-training-workflow-results-in-store',
      // Fewer batches at once, each with a floor under its window (patched: the two above replay).
      'agentic-training-workflow-batch-window',
      // A batch cancelled while its rollouts' starts answered seconds apart: before, it closed with the first
      // rollout released and dropped the others' releases; now it waits for every lane (patched).
      'rollout-batch-workflow-cancelled-closes-early',
      'rollout-batch-workflow-cancelled-lanes-settle',
    ];
    for (const expected of expectedNames) {
      expect(names).toContain(expected);
    }
    // One replay worker (the run's workflow bundle) for all of them; each history under its file name as its
    // id. It runs with the production data converter (the encryption plugin's codec and failure converter, which
    // the bundle holds too): plaintext histories pass through it.
    const plugin = testEncryptionPlugin();
    const failures: string[] = [];
    const inputs = histories.map(({ name, history }) => ({ workflowId: name, history }));
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: testWorkflowBundle(), replayName: 'histories', ...(plugin && { plugins: [plugin] }) },
      inputs,
    ))
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    expect(failures).toEqual([]);
  }, 300_000);
});
