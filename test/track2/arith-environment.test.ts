import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ArithEnvironment } from '../../environments/arith/arith-environment.js';
import { calculate } from '../../environments/arith/calculator.js';
import { arithProblem } from '../../environments/arith/problems.js';
import type { EpisodeStep } from '../../environments/environment.js';
import { createEnvironmentRegistry, registerEnvironment } from '../../environments/registry.js';
import { describeEnvironmentContract } from '../contracts/environment-contract.js';

describe('calculator', () => {
  it('follows precedence, parentheses, unary minus and decimals', () => {
    expect(calculate('12*7+3')).toEqual({ ok: true, value: 87 });
    expect(calculate('2*(3+4)-10/4')).toEqual({ ok: true, value: 11.5 });
    expect(calculate('-(2+3)*-2')).toEqual({ ok: true, value: 10 });
    expect(calculate('1.5 × 4 ÷ 2')).toEqual({ ok: true, value: 3 });
  });

  it('answers errors instead of throwing', () => {
    expect(calculate('1/0')).toEqual({ ok: false, error: 'division by zero' });
    expect(calculate('2+')).toMatchObject({ ok: false });
    expect(calculate('(1+2')).toMatchObject({ ok: false });
    expect(calculate('process.exit()')).toMatchObject({ ok: false });
  });
});

describe('arith environment', () => {
  const env = new ArithEnvironment({ count: 20 });

  it('generates the same problem for the same id, and its expression solves it', async () => {
    for (let k = 0; k < 20; k++) {
      const task = await env.loadTask(`arith-${k}`);
      expect(task.data).toEqual(arithProblem(k));
      expect(calculate(task.data.expression)).toEqual({ ok: true, value: task.data.answer });
    }
    expect(await env.listTasks()).toHaveLength(20);
    await expect(env.loadTask('nope')).rejects.toThrow(/arith-<number>/);
  });

  it('loads a problem from a JSON file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'arith-'));
    const path = join(dir, 'p.json');
    await writeFile(path, JSON.stringify({ question: 'What is 2+2?', answer: 4 }));
    expect((await env.loadTask(path)).data).toEqual({ question: 'What is 2+2?', answer: 4, expression: '' });
    await rm(dir, { recursive: true });
  });

  it('runs tools and scores the submitted or final answer: +1 right, 0 wrong, -1 none', async () => {
    const task = await env.loadTask('arith-0');
    const context = { task, sandbox: null };
    expect(env.sandboxSpec()).toBeNull();
    const reset = await env.reset(context);
    expect(reset.messages.at(-1)?.content).toBe(task.data.question);
    expect(reset.tools.map((t) => t.function.name)).toEqual(['calculator', 'submit']);

    const calc = { id: 'c', name: 'calculator', arguments: { expression: task.data.expression } };
    expect(await env.step(context, calc)).toEqual({ observation: String(task.data.answer), done: false });
    const submit = { id: 's', name: 'submit', arguments: { answer: task.data.answer } };
    const submitted = await env.step(context, submit);
    expect(submitted).toEqual({ observation: `submitted ${task.data.answer}`, done: true });
    expect(await env.step(context, { id: 'x', name: 'rm', arguments: {} })).toEqual({
      observation: '[TOOL_ERROR] unknown tool: rm',
      done: false,
    });

    const history: EpisodeStep[] = [{ action: submit, observation: submitted.observation }];
    expect((await env.evaluate({ ...context, history }, null)).reward).toBe(1);
    const wrong = { ...submit, arguments: { answer: task.data.answer + 1 } };
    expect(
      (await env.evaluate({ ...context, history: [{ action: wrong, observation: 'submitted' }] }, null))
        .reward,
    ).toBe(0);
    expect((await env.evaluate(context, `So it is ${task.data.answer}.`)).reward).toBe(1);
    expect((await env.evaluate(context, 'no idea')).reward).toBe(-1);
  });

  it('is in the registry, which accepts other kinds', () => {
    expect(createEnvironmentRegistry().get('arith')?.kind).toBe('arith');
    registerEnvironment('arith-small', () =>
      Object.assign(new ArithEnvironment({ count: 2 }), { kind: 'arith-small' }),
    );
    expect(createEnvironmentRegistry({}, ['arith-small']).get('arith-small')?.kind).toBe('arith-small');
    expect(() => createEnvironmentRegistry({}, ['nope'])).toThrow(/unknown environment kind/);
  });
});

describeEnvironmentContract('arith (container-free)', async () => {
  const { answer } = arithProblem(0);
  return {
    environment: new ArithEnvironment(),
    taskId: 'arith-0',
    solved: { actions: [{ name: 'submit', arguments: { answer } }], finalAnswer: null },
    unsolved: { actions: [{ name: 'submit', arguments: { answer: answer + 1 } }], finalAnswer: null },
  };
});
