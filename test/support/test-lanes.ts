// Which lane of `npm run test:ts` runs a test file (scripts/test-lanes.sh runs the two at once, each a vitest
// process with its own Temporal dev server). Lane 1 holds every file that starts or lists Docker containers,
// builds images or runs vLLM, so two such files never run at the same time (several list containers by label and
// would see each other's), and a few others that balance the lanes' measured durations (docs/testing.md); lane 2
// holds the rest.

/** Paths (relative to the repository root) or folder prefixes ending in `/` that run in lane 1. */
export const LANE_ONE: readonly string[] = [
  'test/sandbox/',
  'test/environments/',
  'test/track2/agentic-cancel.test.ts',
  'test/track2/gui-rollout.test.ts',
  'test/track2/rollout-timeout.test.ts',
  'test/track2/swe-rollout.test.ts',
  'test/track2/terminal-rollout.test.ts',
  'test/track2/toolcall-rollout.test.ts',
  'test/track2/vllm-agentic-training.test.ts',
  'test/recovery/env-worker-kill.test.ts',
  'test/activities/engine-container-queue.test.ts',
  'test/activities/engine-container.test.ts',
  'test/activities/slime-trainer.test.ts',
  'test/workflows/trainer-worker.test.ts',
  'test/workers/worker-metrics.test.ts',
  'test/cli/images-progress.test.ts',
  'test/conformance/app-image.test.ts',
  'test/conformance/server-commands.test.ts',
  'test/security/bad-input.test.ts',
  'test/e2e/track1-vllm.test.ts',
  'test/e2e/tenant-adapters-vllm.test.ts',
  'test/engines/vllm-adapter.test.ts',
  'test/engines/vllm-prompt-temperature.test.ts',
  // Not Docker: long files that balance the lanes (lane 2 also pays a few seconds of start-up for each of its
  // many short files).
  'test/e2e/openclaw-agent.test.ts',
  'test/e2e/openclaw-daemon.test.ts',
  'test/e2e/openclaw-feedback.test.ts',
  'test/e2e/openclaw-responses.test.ts',
  'test/recovery/crash-recovery.test.ts',
  'test/gateway/compacted-conversation.test.ts',
];

export const LANE_COUNT = 2;

/** The lane (1 or 2) of a test file, by its path relative to the repository root. */
export function laneOf(relativePath: string): 1 | 2 {
  const path = relativePath.split('\\').join('/');
  return LANE_ONE.some((entry) => (entry.endsWith('/') ? path.startsWith(entry) : path === entry)) ? 1 : 2;
}
