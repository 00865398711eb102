// The contract every Track 2 environment kind passes (environments/environment.ts): tasks listed and loaded by
// id; a sandbox asked for only by kinds that run in one; reset opens the episode with a user message and
// function tools; a tool call the kind does not have is answered as an observation, never thrown; evaluate
// scores a solved episode above an unsolved one. Episodes run as an env host runs them: the history of executed
// calls passed on each step, in a sandbox from a real provider for kinds that need one.
// Run by test/track2/arith-environment.test.ts (container-free) and, in Docker, test/environments/toolcall.test.ts
// terminal.test.ts, swe.test.ts and gui.test.ts.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluationRolloutId } from '../../activities/rollout-sandboxes.js';
import type {
  Environment,
  EpisodeContext,
  EpisodeStep,
  Evaluation,
  ResetResult,
  ToolCallAction,
} from '../../environments/environment.js';
import type { Sandbox, SandboxProvider, SandboxSpec } from '../../environments/sandbox.js';

/** The policy's side of one episode: its tool calls, then its last message. */
export interface ScriptedEpisode {
  actions: Omit<ToolCallAction, 'id'>[];
  finalAnswer: string | null;
}

export interface EnvironmentContractSubject {
  environment: Environment;
  /** A task of the kind, with an episode that solves it and one that does not. */
  taskId: string;
  solved: ScriptedEpisode;
  unsolved: ScriptedEpisode;
  /**
   * Where episodes of a kind that needs a sandbox get one (and, as from an env host, a fresh one for evaluation
   * under `evaluationRolloutId`); absent for container-free kinds.
   */
  sandboxes?: { provider: SandboxProvider; rolloutId(label: string): string };
  close?(): Promise<void>;
}

export function describeEnvironmentContract(
  name: string,
  start: () => Promise<EnvironmentContractSubject>,
  timeoutMs = 60_000,
): void {
  describe(`environment contract: ${name}`, () => {
    let subject: EnvironmentContractSubject;
    let environment: Environment;

    beforeAll(async () => {
      subject = await start();
      environment = subject.environment;
    }, 300_000);

    afterAll(async () => {
      await subject?.close?.();
    });

    /** Runs `use` in an episode of the subject's task, once reset (its sandbox released afterwards). */
    async function inEpisode<T>(
      label: string,
      use: (context: EpisodeContext, opened: ResetResult) => Promise<T>,
    ): Promise<T> {
      const task = await environment.loadTask(subject.taskId);
      const spec = environment.sandboxSpec(task);
      const sandboxes = subject.sandboxes;
      if (spec && !sandboxes) throw new Error(`${environment.kind} asks for a sandbox; the subject has none`);
      const rolloutId = sandboxes?.rolloutId(label) ?? label;
      const sandbox =
        spec && sandboxes ? (await sandboxes.provider.acquire(spec, rolloutId, 600_000)).sandbox : null;
      const freshSandbox = async <T>(fresh: SandboxSpec, run: (box: Sandbox) => Promise<T>): Promise<T> => {
        if (!sandboxes) throw new Error('no sandbox provider');
        const id = evaluationRolloutId(rolloutId);
        try {
          return await run((await sandboxes.provider.acquire(fresh, id, 600_000)).sandbox);
        } finally {
          await sandboxes.provider.release(id);
        }
      };
      try {
        const context: EpisodeContext = { task, sandbox, history: [], ...(sandboxes && { freshSandbox }) };
        return await use(context, await environment.reset(context));
      } finally {
        if (sandbox) await sandboxes?.provider.release(rolloutId);
      }
    }

    /** Plays the script's calls (until the environment says done) and evaluates the episode. */
    function play(label: string, script: ScriptedEpisode): Promise<Evaluation> {
      return inEpisode(label, async (context) => {
        const history: EpisodeStep[] = [];
        for (const [k, call] of script.actions.entries()) {
          const action: ToolCallAction = { id: `call-${k}`, ...call };
          const result = await environment.step({ ...context, history: [...history] }, action);
          expect(typeof result.observation).toBe('string');
          history.push({ action, observation: result.observation });
          if (result.done) break;
        }
        return environment.evaluate({ ...context, history }, script.finalAnswer);
      });
    }

    it('lists its tasks and loads one by id, refusing an id it does not have', async () => {
      const ids = await environment.listTasks();
      expect(ids.length).toBeGreaterThan(0);
      for (const id of [ids[0] as string, subject.taskId]) {
        const task = await environment.loadTask(id);
        expect(task.kind).toBe(environment.kind);
        expect(task.id).toBe(id);
      }
      await expect(environment.loadTask('no-such-task-of-any-kind')).rejects.toThrow();
    });

    it('asks for a sandbox only where it runs in one', async () => {
      const spec = environment.sandboxSpec(await environment.loadTask(subject.taskId));
      expect(spec === null).toBe(subject.sandboxes === undefined);
      if (spec) expect(spec.image.length).toBeGreaterThan(0);
    });

    it(
      'opens an episode with a user message and function tools of distinct names',
      async () => {
        const opened = await inEpisode('reset', async (_context, reset) => reset);
        expect(opened.messages.some((m) => m.role === 'user')).toBe(true);
        expect(opened.tools.length).toBeGreaterThan(0);
        for (const tool of opened.tools) {
          expect(tool.type).toBe('function');
          expect(tool.function.name).toMatch(/^[A-Za-z0-9_-]+$/);
          expect(typeof tool.function.parameters).toBe('object');
        }
        const names = opened.tools.map((t) => t.function.name);
        expect(new Set(names).size).toBe(names.length);
      },
      timeoutMs,
    );

    it(
      'answers a tool it does not have as an observation',
      async () => {
        const result = await inEpisode('unknown-tool', (context) =>
          environment.step(context, { id: 'call-0', name: 'no_such_tool', arguments: {} }),
        );
        expect(result.observation).toMatch(/unknown tool/i);
        expect(result.done).toBe(false);
      },
      timeoutMs,
    );

    it(
      'scores a solved episode above an unsolved one',
      async () => {
        const solved = await play('solved', subject.solved);
        const unsolved = await play('unsolved', subject.unsolved);
        for (const evaluation of [solved, unsolved]) {
          expect(Number.isFinite(evaluation.reward)).toBe(true);
          expect(evaluation.detail.length).toBeGreaterThan(0);
        }
        expect(solved.reward).toBeGreaterThan(unsolved.reward);
      },
      timeoutMs,
    );
  });
}
