import { describe, expect, it } from 'vitest';
import { clipMiddle } from '../../core/clip-middle.js';
import { meanStepVote, parseJudgeVote } from '../../core/judge-votes.js';
import { buildStepJudgeMessages, STEP_JUDGE_LIMITS } from '../../core/step-judge-prompt.js';

describe('the Track 2 step judge', () => {
  it('scores a step by the mean of its valid ±1 votes, 0 without one', () => {
    const votes = (...replies: (string | null)[]) => replies.map(parseJudgeVote);
    expect(meanStepVote(votes('\\boxed{1}', '\\boxed{1}', '\\boxed{-1}'))).toBeCloseTo(1 / 3, 12);
    expect(meanStepVote(votes('\\boxed{1}', null, 'no verdict'))).toBe(1);
    expect(meanStepVote(votes('\\boxed{0}', null))).toBe(0);
    expect(meanStepVote(votes('\\boxed{-1}', '\\boxed{-1}'))).toBe(-1);
    expect(meanStepVote([])).toBe(0);
  });

  it('shows the task, the earlier steps and the judged step with its results, each cut to its limit', () => {
    const long = 'x'.repeat(STEP_JUDGE_LIMITS.currentText + 500);
    const [system, user] = buildStepJudgeMessages({
      task: 'Task name:demo\nTask instruction: count the files',
      history: [
        {
          step: 0,
          assistantText: 'Listing first.',
          toolCalls: ['{"name":"shell_exec","arguments":{"command":"ls"}}'],
          results: ['[shell_exec] a b c'],
          parseError: false,
        },
      ],
      current: { step: 1, assistantText: long, toolCalls: [], results: ['bad markup'], parseError: true },
    });
    expect(system?.content).toContain('\\boxed{1}');
    expect(system?.content).toContain('\\boxed{-1}');
    expect(user?.content).toContain('Task instruction: count the files');
    expect(user?.content).toContain('### Step 1\nAgent wrote:\nListing first.');
    expect(user?.content).toContain('Parse error shown to the agent:\nbad markup');
    expect(user?.content).toContain('[... 500 characters cut ...]');
    expect(user?.content.indexOf('### Step 1')).toBeLessThan(user?.content.indexOf('### Step 2') ?? -1);
  });

  it('keeps head and tail of a long text', () => {
    expect(clipMiddle('abcdefghij', 20)).toBe('abcdefghij');
    expect(clipMiddle('abcdefghij', 5)).toBe('abc\n[... 5 characters cut ...]\nij');
  });
});
