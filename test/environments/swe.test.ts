// The swe environment in real containers of the bundled fixture images, driven by scripted bash commands
// (no model): the fixtures' tests really fail before a fix, known-good command sequences earn +1 when the
// patch is evaluated in a fresh container, and empty, test-editing or regressing patches earn −1.
// Needs the images openclaw/swe-{semver,iniconf,daterange} (built here on first use).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluationRolloutId } from '../../activities/rollout-sandboxes.js';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import type { EpisodeStep, ToolCallAction } from '../../environments/environment.js';
import type { Sandbox, SandboxSpec } from '../../environments/sandbox.js';
import { runBash } from '../../environments/swe/bash-tool.js';
import type { SweConfigInput } from '../../environments/swe/swe-config.js';
import { SweEnvironment } from '../../environments/swe/swe-environment.js';
import { evaluatePatch } from '../../environments/swe/swe-evaluation.js';
import { SUBMIT_COMMAND } from '../../environments/swe/swe-patch.js';
import { parseTestOutcomes, testCommandLine } from '../../environments/swe/test-outcomes.js';
import { describeEnvironmentContract } from '../contracts/environment-contract.js';
import { docker, ensureImage, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';

const ids = rolloutIds('swe');
const provider = new DockerSandboxProvider();
const TEST_CONFIG: SweConfigInput = {
  limits: { memoryBytes: 512 * 1024 * 1024, cpus: 1, pids: 128 },
  commandTimeoutMs: 30_000,
  evalTimeoutMs: 60_000,
  stepLimit: 10,
};
const FIXTURES = ['openclaw__minisemver-1', 'openclaw__iniconf-1', 'openclaw__daterange-1'];

/** Known-good edits, one per fixture: a heredoc'd Python edit, a python3 -c edit, a sed edit. */
const FIXES: Record<string, string> = {
  'openclaw__minisemver-1': `python3 - <<'EOF'
import pathlib
path = pathlib.Path("minisemver/version.py")
source = path.read_text()
fixed = """    if a.isdigit() and b.isdigit():
        return (int(a) > int(b)) - (int(a) < int(b))
    if a.isdigit() != b.isdigit():
        return -1 if a.isdigit() else 1
    return (a > b) - (a < b)
"""
path.write_text(source.replace("    return (a > b) - (a < b)\\n", fixed, 1))
EOF`,
  'openclaw__iniconf-1': `python3 -c '
import pathlib
path = pathlib.Path("iniconf/parser.py")
source = path.read_text()
old = """    for index, char in enumerate(value):
        if char in COMMENT_MARKERS and index > 0 and value[index - 1].isspace():"""
new = r"""    quoted = False
    for index, char in enumerate(value):
        if char == "\\"":
            quoted = not quoted
        elif char in COMMENT_MARKERS and not quoted and index > 0 and value[index - 1].isspace():"""
assert old in source
path.write_text(source.replace(old, new))
'`,
  'openclaw__daterange-1': `sed -i 's/return (self.end - self.start).days$/return (self.end - self.start).days + 1/' daterange/ranges.py`,
};

beforeAll(async () => {
  for (const name of ['swe-semver', 'swe-iniconf', 'swe-daterange']) await ensureImage(`openclaw/${name}`);
}, IMAGE_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await ids.removeAll();
  expect(await ids.leftovers()).toEqual([]);
});

async function containerExists(id: string): Promise<boolean> {
  return docker
    .getContainer(id)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

/** What an env host gives `evaluate`: a new container under the rollout's `.eval` id, removed afterwards. */
function freshSandboxes(rolloutId: string, used: string[]) {
  return async <T>(spec: SandboxSpec, use: (sandbox: Sandbox) => Promise<T>): Promise<T> => {
    const { sandbox } = await provider.acquire(spec, evaluationRolloutId(rolloutId), 5 * 60_000);
    used.push(sandbox.id);
    try {
      return await use(sandbox);
    } finally {
      await provider.release(evaluationRolloutId(rolloutId));
    }
  };
}

async function startEpisode(taskId: string, config: SweConfigInput = TEST_CONFIG) {
  const environment = new SweEnvironment({ config });
  const task = await environment.loadTask(taskId);
  const rolloutId = ids.next(taskId);
  const { sandbox } = await provider.acquire(environment.sandboxSpec(task), rolloutId, 10 * 60_000);
  const opening = await environment.reset({ task, sandbox, history: [] });
  const history: EpisodeStep[] = [];
  const evaluationContainers: string[] = [];
  return {
    environment,
    task,
    sandbox,
    opening,
    evaluationContainers,
    async run(command: string, id = `call-${history.length}`) {
      const action: ToolCallAction = { id, name: 'bash', arguments: { command } };
      const result = await environment.step({ task, sandbox, history }, action);
      history.push({ action, observation: result.observation });
      return result;
    },
    evaluate() {
      return environment.evaluate(
        { task, sandbox, history, freshSandbox: freshSandboxes(rolloutId, evaluationContainers) },
        null,
      );
    },
  };
}

describe('swe fixture repositories', () => {
  it.each(FIXTURES)(
    '%s: base commit as named, FAIL_TO_PASS fail and PASS_TO_PASS pass before a fix, the reference patch resolves it',
    async (taskId) => {
      const environment = new SweEnvironment({ config: TEST_CONFIG });
      const task = await environment.loadTask(taskId);
      const instance = task.data;
      const { sandbox } = await provider.acquire(
        environment.sandboxSpec(task),
        ids.next('before'),
        5 * 60_000,
      );
      const settings = { workdir: '/testbed', timeoutMs: 60_000 };
      const head = await runBash(sandbox, 'git rev-parse HEAD && git status --porcelain && id -un', settings);
      expect(head).toEqual({ returncode: 0, output: `${instance.baseCommit}\nagent\n` });

      const run = await runBash(sandbox, testCommandLine(instance, environment.config.testCommand), settings);
      const outcomes = parseTestOutcomes(run.output);
      for (const id of instance.failToPass) expect([id, outcomes.get(id)]).toEqual([id, 'failed']);
      for (const id of instance.passToPass) expect([id, outcomes.get(id)]).toEqual([id, 'passed']);

      const { sandbox: fresh } = await provider.acquire(
        environment.sandboxSpec(task),
        ids.next('gold'),
        5 * 60_000,
      );
      const verdict = await evaluatePatch(fresh, instance, instance.goldPatch ?? '', {
        ...settings,
        testCommand: environment.config.testCommand,
      });
      expect(verdict).toEqual({
        resolved: true,
        detail: `resolved: ${instance.failToPass.length} FAIL_TO_PASS and ${instance.passToPass.length} PASS_TO_PASS tests pass`,
      });
    },
  );
});

describe('swe environment', () => {
  it('offers one bash tool, one call per turn, and the mini-swe-agent style prompts', async () => {
    const episode = await startEpisode('openclaw__daterange-1');
    expect(episode.opening.tools.map((tool) => tool.function.name)).toEqual(['bash']);
    expect(episode.opening.maxCallsPerTurn).toBe(1);
    expect(episode.opening.messages[0]?.content).toMatch(/THOUGHT/);
    const user = String(episode.opening.messages[1]?.content);
    expect(user).toContain('DateRange drops its last day');
    expect(user).toContain(SUBMIT_COMMAND);
  });

  it.each(FIXTURES)(
    '%s: a known-good edit, a test run, then submit → +1, scored in a fresh container that is removed',
    async (taskId) => {
      const episode = await startEpisode(taskId);
      const edit = await episode.run(FIXES[taskId] as string);
      expect(edit).toEqual({
        observation:
          '<returncode>0</returncode>\n<output>\n</output>\nREMINDER: You have 9 turns left to complete the task.',
        done: false,
      });
      const tests = await episode.run('python3 -m pytest -q -p no:cacheprovider 2>&1 | tail -1');
      expect(tests.observation).toMatch(/^<returncode>0<\/returncode>\n<output>\n\d+ passed in /);
      expect(tests.observation).toMatch(/You have 8 turns left/);
      const submit = await episode.run(SUBMIT_COMMAND);
      expect(submit.done).toBe(true);
      expect(submit.observation).toMatch(/COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndiff --git a\//);
      expect(submit.observation).not.toMatch(/REMINDER/);

      const evaluation = await episode.evaluate();
      expect(evaluation).toEqual({
        reward: 1,
        detail: expect.stringMatching(
          /^submitted patch: resolved: \d+ FAIL_TO_PASS and \d+ PASS_TO_PASS tests pass$/,
        ),
      });
      expect(episode.evaluationContainers).toHaveLength(1);
      expect(episode.evaluationContainers[0]).not.toBe(episode.sandbox.id);
      expect(await containerExists(episode.evaluationContainers[0] as string)).toBe(false);
      expect(await containerExists(episode.sandbox.id)).toBe(true); // the rollout releases its own later
    },
  );

  it('submitting without a fix → -1 (empty patch), no evaluation container', async () => {
    const episode = await startEpisode('openclaw__minisemver-1');
    await episode.run('grep -n "_compare_identifiers" -A3 minisemver/version.py');
    expect((await episode.run(SUBMIT_COMMAND)).done).toBe(true);
    expect(await episode.evaluate()).toEqual({
      reward: -1,
      detail: 'submitted patch: the patch is empty (no change was made)',
    });
    expect(episode.evaluationContainers).toEqual([]);
  });

  it('a patch that breaks a PASS_TO_PASS test → -1, naming it', async () => {
    const episode = await startEpisode('openclaw__minisemver-1');
    // Orders identifiers by length first: beta.2 < beta.11 now, but "alpha" sorts after "beta".
    await episode.run(
      `sed -i 's/return (a > b) - (a < b)/return (len(a) > len(b)) - (len(a) < len(b)) or (a > b) - (a < b)/' minisemver/version.py`,
    );
    await episode.run(SUBMIT_COMMAND);
    const evaluation = await episode.evaluate();
    expect(evaluation.reward).toBe(-1);
    expect(evaluation.detail).toMatch(
      /^submitted patch: not resolved: .*PASS_TO_PASS broken \(\d+\/15\): tests\/test_version.py::test_alphanumeric_identifiers_compare_lexically/,
    );
  });

  it('editing the tests instead of the code → -1: the evaluation restores the test files', async () => {
    const episode = await startEpisode('openclaw__daterange-1');
    await episode.run(`sed -i 's/== 31/== 30/; s/== 4$/== 3/' tests/test_ranges.py && git diff --stat`);
    await episode.run(SUBMIT_COMMAND);
    const evaluation = await episode.evaluate();
    expect(evaluation.reward).toBe(-1);
    expect(evaluation.detail).toMatch(/FAIL_TO_PASS not passing \(3\/3\)/);
  });

  it('without a submission the container diff is evaluated (a fix counts, an untouched repository does not)', async () => {
    const episode = await startEpisode('openclaw__iniconf-1');
    await episode.run(FIXES['openclaw__iniconf-1'] as string);
    const evaluation = await episode.evaluate();
    expect(evaluation).toMatchObject({ reward: 1 });
    expect(evaluation.detail).toMatch(/^no submission; the container diff: resolved/);

    const untouched = await startEpisode('openclaw__iniconf-1');
    expect(await untouched.evaluate()).toEqual({
      reward: -1,
      detail: 'no submission; the container diff: the patch is empty (no change was made)',
    });
  });

  it('answers timeouts, long output, unknown tools and retried steps as mini-swe-agent does', async () => {
    const episode = await startEpisode('openclaw__daterange-1', { ...TEST_CONFIG, commandTimeoutMs: 1_000 });
    const slow = await episode.run('echo started; sleep 10');
    expect(slow.observation).toMatch(
      /^<returncode>-1<\/returncode>\n<output>\nstarted\n\nCommand timed out after 1 s<\/output>/,
    );
    const long = await episode.run('seq 1 5000; echo oops >&2; exit 3');
    expect(long.observation).toMatch(
      /^<returncode>3<\/returncode>\n<warning>\nThe output of your last command was too long/,
    );
    expect(long.observation).toContain('<output_head>\n1\n2\n3\n');
    expect(long.observation).toContain('5000\noops\n\n</output_tail>');
    expect(long.observation).toMatch(/<elided_chars>\n\d+ characters elided/);

    const action: ToolCallAction = { id: 'x', name: 'python', arguments: { code: '1' } };
    const unknown = await episode.environment.step(
      { task: episode.task, sandbox: episode.sandbox, history: [] },
      action,
    );
    expect(unknown.observation).toMatch(/^<returncode>-1<\/returncode>\n<output>\nunknown tool "python"/);

    // The same call again (a retried activity) answers the recorded result without running it twice.
    const first = await episode.run('echo line >> /tmp/count && wc -l < /tmp/count', 'same-id');
    const again = await episode.environment.step(
      { task: episode.task, sandbox: episode.sandbox, history: [] },
      {
        id: 'same-id',
        name: 'bash',
        arguments: { command: 'echo line >> /tmp/count && wc -l < /tmp/count' },
      },
    );
    expect(again).toEqual(first);
    expect(
      (await runBash(episode.sandbox, 'wc -l < /tmp/count', { workdir: '/testbed', timeoutMs: 5_000 }))
        .output,
    ).toBe('1\n');
  });
});

describeEnvironmentContract(
  'swe (sandbox containers, evaluated in a fresh one)',
  async () => ({
    environment: new SweEnvironment({ config: TEST_CONFIG }),
    taskId: 'openclaw__daterange-1',
    solved: {
      actions: [
        { name: 'bash', arguments: { command: FIXES['openclaw__daterange-1'] as string } },
        { name: 'bash', arguments: { command: SUBMIT_COMMAND } },
      ],
      finalAnswer: null,
    },
    unsolved: { actions: [{ name: 'bash', arguments: { command: SUBMIT_COMMAND } }], finalAnswer: null },
    sandboxes: { provider, rolloutId: (label) => ids.next(label) },
  }),
  240_000,
);
