import { describe, expect, it } from 'vitest';
import { buildBinaryJudgeMessages, buildHintJudgeMessages } from '../../core/judge-prompts.js';

const input = {
  responseText: 'RESPONSE-TEXT',
  nextStateText: 'NEXT-STATE-TEXT',
  nextStateRole: 'tool' as const,
};

describe('buildBinaryJudgeMessages', () => {
  const messages = buildBinaryJudgeMessages(input);

  it('is a system and a user message', () => {
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('states the output contract: one of \\boxed{1}, \\boxed{-1}, \\boxed{0}', () => {
    const system = messages[0]?.content ?? '';
    for (const box of ['\\boxed{1}', '\\boxed{-1}', '\\boxed{0}']) expect(system).toContain(box);
    expect(messages[1]?.content).toContain('\\boxed{1}, \\boxed{-1} or \\boxed{0}');
  });

  it('explains both next-state roles', () => {
    expect(messages[0]?.content).toContain("role 'user'");
    expect(messages[0]?.content).toContain("role 'tool'");
  });

  it('shows the response, then the next state with its role', () => {
    const user = messages[1]?.content ?? '';
    expect(user.indexOf('RESPONSE-TEXT')).toBeLessThan(user.indexOf('NEXT-STATE-TEXT'));
    expect(user).toContain('[role: tool]');
  });

  it('is written in the project’s own words, not the original prompt', () => {
    expect(messages[0]?.content).not.toContain(
      'You are a process reward model (PRM) evaluating an AI assistant.',
    );
    expect(messages[0]?.content).not.toContain('successfully fulfilled');
  });
});

describe('buildHintJudgeMessages', () => {
  const messages = buildHintJudgeMessages({ ...input, nextStateRole: 'user' });

  it('states the output contract: \\boxed{1} or \\boxed{-1}, and a hint block only for 1', () => {
    const system = messages[0]?.content ?? '';
    expect(system).toContain('\\boxed{1}');
    expect(system).toContain('\\boxed{-1}');
    expect(system).toContain('[HINT_START]');
    expect(system).toContain('[HINT_END]');
    expect(system).not.toContain('\\boxed{0}');
  });

  it('shows the response at turn t and the next state at turn t+1 with its role', () => {
    const user = messages[1]?.content ?? '';
    expect(user).toContain('turn t)\nRESPONSE-TEXT');
    expect(user).toContain('[role: user]\nNEXT-STATE-TEXT');
  });

  it('is written in the project’s own words', () => {
    expect(messages[0]?.content).not.toContain(
      'You are a process reward model used for hindsight hint extraction.',
    );
  });
});
