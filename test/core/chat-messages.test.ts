import { describe, expect, it } from 'vitest';
import {
  flattenContent,
  nextStateAfter,
  nextStateOf,
  normaliseMessagesForTemplate,
} from '../../core/chat-messages.js';
import { codePointLength, pythonStrip } from '../../core/python-text.js';
import { parseTurnSampleId, rolloutSampleId, turnSampleId } from '../../core/sample-id.js';

describe('flattenContent', () => {
  it('joins text parts with one space and drops the rest', () => {
    expect(
      flattenContent([
        { type: 'text', text: 'a' },
        { type: 'image_url', image_url: {} },
        { type: 'text' },
        { type: 'text', text: 'b' },
      ]),
    ).toBe('a  b');
    expect(flattenContent([])).toBe('');
    expect(flattenContent(null)).toBe('');
    expect(flattenContent('plain')).toBe('plain');
    expect(flattenContent(42)).toBe('42');
  });
});

describe('normaliseMessagesForTemplate', () => {
  it('renames developer to system and flattens list content, without touching the input', () => {
    const input = [
      { role: 'developer', content: 'rules' },
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: null, tool_calls: [] },
    ];
    expect(normaliseMessagesForTemplate(input)).toEqual([
      { role: 'system', content: 'rules' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [] },
    ]);
    expect(input[0]?.role).toBe('developer');
  });
});

describe('nextStateOf', () => {
  it('keeps tool results as tool and reads everything else as the user', () => {
    expect(nextStateOf({ role: 'tool', content: 'ok', tool_call_id: '1' })).toEqual({
      role: 'tool',
      text: 'ok',
    });
    expect(nextStateOf({ role: 'user', content: [{ type: 'text', text: 'redo' }] })).toEqual({
      role: 'user',
      text: 'redo',
    });
  });
});

describe('python text rules', () => {
  it('strips Python whitespace and counts code points', () => {
    expect(pythonStrip('\u001c\t x \u3000')).toBe('x');
    expect(pythonStrip('\ufeffx')).toBe('\ufeffx');
    expect(pythonStrip('   ')).toBe('');
    expect(codePointLength('a😀')).toBe(2);
  });
});

describe('sample ids', () => {
  it('formats and parses <session>:<turn>-<digest>, and the numbered form, even when the session has colons', () => {
    const digest = '0123456789abcdef';
    expect(turnSampleId('openai:alice', 2, digest)).toBe(`openai:alice:2-${digest}`);
    expect(parseTurnSampleId(`openai:alice:2-${digest}`)).toEqual({
      sessionId: 'openai:alice',
      turn: 2,
      turnKey: `2-${digest}`,
    });
    expect(turnSampleId('openai:alice', 2)).toBe('openai:alice:2');
    expect(parseTurnSampleId('openai:alice:2')).toEqual({ sessionId: 'openai:alice', turn: 2, turnKey: '2' });
    expect(rolloutSampleId('r-1', 0)).toBe('r-1:0');
    expect(parseTurnSampleId('nocolon')).toBeNull();
    expect(parseTurnSampleId('a:01')).toBeNull();
    expect(parseTurnSampleId('a:1-XYZ')).toBeNull();
    expect(parseTurnSampleId(':1')).toBeNull();
  });

  it('rejects turn 0, malformed digests and negative steps', () => {
    expect(() => turnSampleId('s', 0)).toThrow(/positive integer/);
    expect(() => turnSampleId('s', 1, 'abc')).toThrow(/hex digits/);
    expect(() => rolloutSampleId('r', -1)).toThrow(/non-negative/);
  });
});

describe('nextStateAfter', () => {
  it("keeps the user's reply when the client appends its own context message after it (OpenClaw)", () => {
    const messages = [
      { role: 'user' as const, content: 'plan a trip' },
      { role: 'assistant' as const, content: 'sure' },
      { role: 'user' as const, content: 'thanks, that helps' },
      {
        role: 'user' as const,
        content: '<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> none <<<END_OPENCLAW_INTERNAL_CONTEXT>>>',
      },
    ];
    expect(nextStateAfter(messages, 0)).toEqual({
      role: 'user',
      text: 'thanks, that helps\n\n<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> none <<<END_OPENCLAW_INTERNAL_CONTEXT>>>',
    });
  });

  it('is a tool state when a tool answered first, and null when nothing follows the reply', () => {
    const call = [{ id: '1', type: 'function' as const, function: { name: 'ls', arguments: '{}' } }];
    const messages = [
      { role: 'user' as const, content: 'list' },
      { role: 'assistant' as const, content: null, tool_calls: call },
      { role: 'tool' as const, content: 'a.txt', tool_call_id: '1' },
      { role: 'user' as const, content: 'context' },
    ];
    expect(nextStateAfter(messages, 0)?.role).toBe('tool');
    expect(nextStateAfter(messages.slice(0, 2), 0)).toBeNull();
    expect(nextStateAfter(messages, 1)).toBeNull();
  });
});
