import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../core/chat-messages.js';
import {
  OMITTED_MIDDLE,
  truncateMessagesHeadTail,
  truncateTokensHeadTail,
} from '../../core/context-truncation.js';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('truncateTokensHeadTail', () => {
  it('leaves a prompt that fits unchanged', () => {
    const result = truncateTokensHeadTail(range(10), 10, [-1]);
    expect(result).toEqual({ ids: range(10), originalLength: 10, truncated: false });
  });

  it('keeps head 30% of the budget, the marker, and the tail, exactly budget tokens long', () => {
    const result = truncateTokensHeadTail(range(100), 20, [-1, -2]);
    // head ⌊0.3·20⌋ = 6, marker 2, tail 12 (ids 88..99).
    expect(result.ids).toEqual([0, 1, 2, 3, 4, 5, -1, -2, ...range(12).map((i) => 88 + i)]);
    expect(result.ids).toHaveLength(20);
    expect(result).toMatchObject({ originalLength: 100, truncated: true });
  });

  it('refuses a budget with no room for a tail', () => {
    expect(() => truncateTokensHeadTail(range(100), 3, [-1, -2, -3])).toThrow(/no room/);
  });
});

describe('truncateMessagesHeadTail', () => {
  const size = (m: ChatMessage) => String(m.content ?? '').length;
  const step = (i: number): ChatMessage[] => [
    { role: 'assistant', content: `a${i}`.padEnd(10, '.') },
    { role: 'tool', content: `t${i}`.padEnd(10, '.') },
  ];
  const messages: ChatMessage[] = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'task' },
    ...step(1),
    ...step(2),
    ...step(3),
  ];

  it('leaves messages that fit unchanged', () => {
    expect(truncateMessagesHeadTail(messages, 1000, size)).toEqual({ messages, omitted: 0 });
  });

  it('drops whole steps from the middle and marks the gap', () => {
    // head 7, steps 20 each, marker 16 → 7 + 16 + 20 = 43 after dropping steps 1 and 2.
    const result = truncateMessagesHeadTail(messages, 45, size);
    expect(result.omitted).toBe(4);
    expect(result.messages.map((m) => m.content)).toEqual([
      'sys',
      'task',
      OMITTED_MIDDLE.trim(),
      'a3........',
      't3........',
    ]);
  });

  it('always keeps the latest step', () => {
    const result = truncateMessagesHeadTail(messages, 1, size);
    expect(result.messages.at(-1)?.content).toBe('t3........');
    expect(result.omitted).toBe(4);
  });
});
