import { describe, expect, it } from 'vitest';
import { answersEquivalent } from '../../core/math-answer.js';
import { parseToolcallConfig } from '../../environments/toolcall/toolcall-config.js';
import { toolcallReward } from '../../environments/toolcall/toolcall-reward.js';
import { readToolcallTasks } from '../../environments/toolcall/toolcall-tasks.js';

describe('toolcallReward (spec 10.4)', () => {
  const { reward } = parseToolcallConfig();

  it('gives +1 for a correct answer whatever the tool use', () => {
    expect(toolcallReward(true, 0, reward)).toBe(1);
    expect(toolcallReward(true, 12, reward)).toBe(1);
  });

  it.each([
    [0, -1.1],
    [1, -1.05],
    [2, -1],
    [3, -0.95],
    [6, -0.8],
    [10, -0.6],
    [16, -0.6],
  ])('a wrong answer after %i tool calls gets %d', (toolCalls, expected) => {
    expect(toolcallReward(false, toolCalls, reward)).toBe(expected);
  });

  it('is configurable, and the shaping can be turned off', () => {
    const custom = parseToolcallConfig({
      reward: { correct: 2, wrong: -2, toolUseShaping: { cap: -1, baselineToolCalls: 0, coefficient: 0.5 } },
    }).reward;
    expect(toolcallReward(true, 0, custom)).toBe(2);
    expect(toolcallReward(false, 2, custom)).toBe(-1.5);
    expect(toolcallReward(false, 8, custom)).toBe(-1);
    const plain = parseToolcallConfig({ reward: { toolUseShaping: null } }).reward;
    expect(toolcallReward(false, 0, plain)).toBe(-1);
    expect(toolcallReward(false, 10, plain)).toBe(-1);
  });

  it('keeps the original limits as defaults', () => {
    const config = parseToolcallConfig();
    expect(config).toMatchObject({
      maxTurns: 16,
      maxToolCalls: 16,
      pythonTimeoutMs: 120_000,
      maxOutputChars: 1024,
    });
  });
});

describe('the bundled tasks', () => {
  it('has at least 20 tasks with unique ids and answers the checker understands', async () => {
    const tasks = await readToolcallTasks();
    expect(tasks.length).toBeGreaterThanOrEqual(20);
    expect(new Set(tasks.map((task) => task.id)).size).toBe(tasks.length);
    for (const task of tasks) expect(answersEquivalent(task.answer, task.answer)).toBe(true);
  });
});
