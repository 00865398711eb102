import { describe, expect, it } from 'vitest';
import { limitCallsPerTurn, parseErrorObservation, parsePolicyAction } from '../../core/action-parsing.js';

const tools = ['calculator', 'submit'];
const call = (name: string, args: unknown, id = 'call_1') => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});

describe('parsePolicyAction', () => {
  it('reads tool calls with JSON-string or object arguments', () => {
    const action = parsePolicyAction(
      {
        content: '',
        tool_calls: [call('calculator', '{"expression": "1+2"}'), call('submit', { answer: 3 }, 'c2')],
      },
      tools,
    );
    expect(action).toEqual({
      kind: 'tools',
      calls: [
        { id: 'call_1', name: 'calculator', arguments: { expression: '1+2' } },
        { id: 'c2', name: 'submit', arguments: { answer: 3 } },
      ],
    });
  });

  it('treats a message without tool calls as the final answer', () => {
    expect(parsePolicyAction({ content: 'It is 42.' }, tools)).toEqual({ kind: 'final', text: 'It is 42.' });
    expect(parsePolicyAction({ content: null, tool_calls: [] }, tools)).toEqual({ kind: 'final', text: '' });
  });

  it('flags tool-call markup the engine could not parse', () => {
    const action = parsePolicyAction({ content: '<tool_call>{"name": "calculator", </tool_call>' }, tools);
    expect(action.kind).toBe('invalid');
  });

  it('flags bad arguments and unknown tools', () => {
    expect(parsePolicyAction({ tool_calls: [call('calculator', '{oops')] }, tools)).toMatchObject({
      kind: 'invalid',
      error: expect.stringMatching(/not valid JSON/),
    });
    expect(parsePolicyAction({ tool_calls: [call('calculator', '[1]')] }, tools)).toMatchObject({
      error: expect.stringMatching(/JSON object/),
    });
    expect(parsePolicyAction({ tool_calls: [call('shell', '{}')] }, tools)).toMatchObject({
      error: expect.stringMatching(/unknown tool "shell"; available: calculator, submit/),
    });
    expect(parsePolicyAction({ tool_calls: [{ function: {} }] }, tools)).toMatchObject({ kind: 'invalid' });
  });

  it('words the error observation for the policy', () => {
    expect(parseErrorObservation('tool call 1: bad')).toMatch(/^\[PARSE_ERROR\] tool call 1: bad\. /);
  });

  it('turns a turn with more calls than allowed into a parse error', () => {
    const two = parsePolicyAction(
      { tool_calls: [call('calculator', '{"expression": "1+1"}'), call('submit', '{"answer": 2}')] },
      tools,
    );
    expect(limitCallsPerTurn(two, undefined)).toBe(two);
    expect(limitCallsPerTurn(two, 2)).toBe(two);
    expect(limitCallsPerTurn(two, 1)).toEqual({
      kind: 'invalid',
      error: '2 tool calls in one turn; this environment takes at most 1 per turn',
    });
    const final = parsePolicyAction({ content: 'done' }, tools);
    expect(limitCallsPerTurn(final, 1)).toBe(final);
  });
});
