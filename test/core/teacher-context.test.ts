import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../core/chat-messages.js';
import {
  alignTeacherLogprobs,
  alignTeacherTopLogprobs,
  appendHintToMessages,
  HINT_MARKER,
  type InputTopLogprobsRow,
  TeacherLogprobsError,
  teacherLogprobStartLen,
} from '../../core/teacher-context.js';

describe('appendHintToMessages', () => {
  it('appends the hint to the last user message and leaves the input alone', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'Convert 5 miles.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1' }] },
      { role: 'tool', content: '8.05', tool_call_id: 'c1' },
    ];
    const before = JSON.stringify(messages);
    const hinted = appendHintToMessages(messages, '  Answer in kilometres.  ');
    expect(hinted[1]?.content).toBe("Convert 5 miles.\n\n[user's hint / instruction]\nAnswer in kilometres.");
    expect(hinted[3]).toEqual(messages[3]);
    expect(hinted[2]).toEqual({ role: 'assistant', content: null, tool_calls: [{ id: 'c1' }] });
    expect(JSON.stringify(messages)).toBe(before);
    expect(hinted[2]).not.toBe(messages[2]);
  });

  it('flattens list content of the target message to its text parts', () => {
    const hinted = appendHintToMessages(
      [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Describe' },
            { type: 'image_url', image_url: { url: 'x' } },
            { type: 'text', text: 'this.' },
          ],
        },
      ],
      'Mention the colours.',
    );
    expect(hinted[0]?.content).toBe(`Describe this.\n\n${HINT_MARKER}\nMention the colours.`);
  });

  // A user sent a screenshot: the teacher must see it where the policy did, with the hint after it.
  it('keeps the images of the target message in place and adds the hint as a text part', () => {
    const image = { type: 'image_ref', digest: `sha256:${'0'.repeat(64)}`, media_type: 'image/png' };
    const messages: ChatMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'What is this?' }, image] },
    ];
    expect(appendHintToMessages(messages, ' Say the colour. ')[0]?.content).toEqual([
      { type: 'text', text: 'What is this?' },
      image,
      { type: 'text', text: `\n\n${HINT_MARKER}\nSay the colour.` },
    ]);
  });

  it('falls back to the last message when no message is from the user, and strips the result', () => {
    const hinted = appendHintToMessages([{ role: 'system', content: '   ' }], 'Be brief.');
    expect(hinted[0]?.content).toBe(`${HINT_MARKER}\nBe brief.`);
  });

  it('treats null content as empty text', () => {
    const hinted = appendHintToMessages([{ role: 'user', content: null }], 'Use SI units.');
    expect(hinted[0]?.content).toBe(`${HINT_MARKER}\nUse SI units.`);
  });

  it('makes a single user message when there are no messages', () => {
    expect(appendHintToMessages([], 'Check the path first.')).toEqual([
      { role: 'user', content: "[user's hint / instruction]\nCheck the path first." },
    ]);
  });
});

describe('teacherLogprobStartLen', () => {
  it('asks from the last prompt position, so the first response token gets a log-prob', () => {
    expect(teacherLogprobStartLen(10, 3)).toBe(6);
    expect(teacherLogprobStartLen(3, 3)).toBe(0);
  });
});

describe('alignTeacherLogprobs', () => {
  // Prompt of 4 tokens (positions 0-3), response of 3 tokens (positions 4-6): total 7.
  it('reads SGLang output from logprob_start_len = promptLength - 1 (entry 0 is always null)', () => {
    const entries = [
      [null, 13],
      [-0.5, 21, 'a'],
      [-1.25, 22, 'b'],
      [-2, 23, 'c'],
    ];
    expect(alignTeacherLogprobs(entries, 3, 3, 7)).toEqual([-0.5, -1.25, -2]);
  });

  it('does not drop the first entry when the entries start at the first response token', () => {
    const entries = [
      [-0.5, 21],
      [-1.25, 22],
      [-2, 23],
    ];
    expect(alignTeacherLogprobs(entries, 3, 4, 7)).toEqual([-0.5, -1.25, -2]);
  });

  it('takes the last responseLength entries of a request from the start of the sequence', () => {
    const entries = [
      null,
      [-9, 11],
      [-8, 12],
      [-7, 13],
      { logprob: -0.5 },
      { logprob: -1.25 },
      { logprob: -2 },
    ];
    expect(alignTeacherLogprobs(entries, 3, 0, 7)).toEqual([-0.5, -1.25, -2]);
  });

  it('throws, naming the fix, when the first response token has no log-prob', () => {
    const entries = [
      [null, 21],
      [-1.25, 22],
      [-2, 23],
    ];
    expect(() => alignTeacherLogprobs(entries, 3, 4, 7)).toThrow(/position 4.*logprob_start_len = 3/);
    expect(() => alignTeacherLogprobs(entries, 3, 4, 7)).toThrow(TeacherLogprobsError);
  });

  it('throws on a null later in the response', () => {
    expect(() =>
      alignTeacherLogprobs(
        [
          [-0.5, 21],
          [null, 22],
          [-2, 23],
        ],
        3,
        4,
        7,
      ),
    ).toThrow(/position 5/);
  });

  it('throws when the entry count does not match the positions requested', () => {
    expect(() =>
      alignTeacherLogprobs(
        [
          [-0.5, 21],
          [-1.25, 22],
        ],
        3,
        4,
        7,
      ),
    ).toThrow(/expected 3 .* got 2/);
    expect(() => alignTeacherLogprobs([[-0.5, 21]], 3, 5, 7)).toThrow(/past the first response token/);
    expect(() => alignTeacherLogprobs([], 8, 0, 7)).toThrow(/exceeds totalLength/);
  });

  it('throws on non-numeric log-probs', () => {
    expect(() => alignTeacherLogprobs([['x', 21]], 1, 6, 7)).toThrow(/not a finite number/);
  });

  it('returns nothing for an empty response', () => {
    expect(alignTeacherLogprobs([[null, 1]], 0, 6, 7)).toEqual([]);
  });
});

describe('alignTeacherTopLogprobs', () => {
  it('returns K log-probs and token ids per response token, in SGLang order', () => {
    const rows: InputTopLogprobsRow[] = [
      null,
      [
        [-0.1, 5, 'x'],
        [-2.5, 9, 'y'],
      ],
      [
        [-0.3, 7],
        [-1.5, 5],
      ],
    ];
    expect(alignTeacherTopLogprobs(rows, 2, 2, 1, 4)).toEqual({
      logProbs: [
        [-0.1, -2.5],
        [-0.3, -1.5],
      ],
      tokenIds: [
        [5, 9],
        [7, 5],
      ],
    });
  });

  it('throws on a short row or a null row inside the response', () => {
    expect(() => alignTeacherTopLogprobs([null, [[-0.1, 5]], [[-0.3, 7]]], 2, 2, 1, 4)).toThrow(
      /expected 2 top/,
    );
    expect(() => alignTeacherTopLogprobs([null, [[-0.1, 5]]], 1, 2, 2, 4)).toThrow(TeacherLogprobsError);
    expect(() => alignTeacherTopLogprobs([[[-0.1, 5]]], 0, 1, 3, 4)).toThrow(/topK must be >= 1/);
  });
});
