import { describe, expect, it } from 'vitest';
import {
  answersEquivalent,
  checkBoxedAnswer,
  evaluateNumeric,
  lastBoxedContent,
  normaliseAnswer,
} from '../../core/math-answer.js';

describe('lastBoxedContent', () => {
  it('takes the last boxed answer, with nested braces', () => {
    expect(lastBoxedContent('first \\boxed{1}, then \\boxed{\\frac{1}{2}}.')).toBe('\\frac{1}{2}');
  });

  it('accepts \\fbox and the brace-less short form', () => {
    expect(lastBoxedContent('so \\fbox{7}')).toBe('7');
    expect(lastBoxedContent('Answer: \\boxed 12')).toBe('12');
  });

  it('is null without a box or with an unclosed one', () => {
    expect(lastBoxedContent('the answer is 42')).toBeNull();
    expect(lastBoxedContent('\\boxed{42')).toBeNull();
  });

  it('treats escaped braces as text', () => {
    expect(lastBoxedContent('\\boxed{\\{1,2\\}}')).toBe('\\{1,2\\}');
  });
});

describe('normaliseAnswer', () => {
  it('strips presentation', () => {
    expect(normaliseAnswer(' \\left( 1 , 2 \\right) ')).toBe('(1,2)');
    expect(normaliseAnswer('\\dfrac{3}{4}')).toBe('\\frac{3}{4}');
    expect(normaliseAnswer('\\text{12 } ')).toBe('12');
    expect(normaliseAnswer('$x = 5$.')).toBe('5');
    expect(normaliseAnswer('30^\\circ')).toBe('30');
    expect(normaliseAnswer('45\\%')).toBe('45');
    expect(normaliseAnswer('\\frac12')).toBe('\\frac{1}{2}');
    expect(normaliseAnswer('\\sqrt2')).toBe('\\sqrt{2}');
  });
});

describe('evaluateNumeric', () => {
  it('evaluates exact arithmetic', () => {
    expect(evaluateNumeric('2^{10}')).toEqual({ numerator: 1024n, denominator: 1n });
    expect(evaluateNumeric('\\frac{6}{8}')).toEqual({ numerator: 3n, denominator: 4n });
    expect(evaluateNumeric('-0.25')).toEqual({ numerator: -1n, denominator: 4n });
    expect(evaluateNumeric('3\\cdot4+1')).toEqual({ numerator: 13n, denominator: 1n });
    expect(evaluateNumeric('1,234,567')).toEqual({ numerator: 1234567n, denominator: 1n });
    expect(evaluateNumeric('2^-2')).toEqual({ numerator: 1n, denominator: 4n });
  });

  it('is null for symbols, division by zero and runaway powers', () => {
    expect(evaluateNumeric('\\sqrt{2}')).toBeNull();
    expect(evaluateNumeric('x+1')).toBeNull();
    expect(evaluateNumeric('1/0')).toBeNull();
    expect(evaluateNumeric('9^9^9^9')).toBeNull();
    expect(evaluateNumeric('(1+2')).toBeNull();
  });
});

describe('answersEquivalent', () => {
  it.each([
    ['42', '42'],
    ['42.0', '42'],
    ['\\frac{1}{2}', '0.5'],
    ['\\dfrac{1}{2}', '1/2'],
    ['\\tfrac12', '\\frac{1}{2}'],
    ['-\\frac{3}{4}', '-0.75'],
    ['1,000,000', '1000000'],
    ['\\$1,000', '1000'],
    ['2^{10}', '1024'],
    ['\\left( 1, 2 \\right)', '(1,2)'],
    ['1, 2', '(1, 2)'],
    ['(\\frac{1}{2}, 3)', '(0.5, 3.0)'],
    ['\\{3, 1, 2\\}', '\\{1, 2, 3\\}'],
    ['\\text{5}', '5'],
    ['x = 7', '7'],
    ['2\\sqrt{3}', '2\\sqrt3'],
    ['x^{2}+1', 'x^2+1'],
    ['+5', '5'],
    ['90^{\\circ}', '90'],
  ])('%s ≡ %s', (predicted, label) => {
    expect(answersEquivalent(predicted, label)).toBe(true);
  });

  it.each([
    ['41', '42'],
    ['0.33', '\\frac{1}{3}'],
    ['(1, 2)', '(2, 1)'],
    ['[0, 1)', '(0, 1)'],
    ['(1, 2, 3)', '(1, 2)'],
    ['\\sqrt{2}', '\\sqrt{3}'],
    ['', '0'],
    ['1,2', '12'],
  ])('%s ≢ %s', (predicted, label) => {
    expect(answersEquivalent(predicted, label)).toBe(false);
  });
});

describe('checkBoxedAnswer', () => {
  it('checks the last box only', () => {
    expect(checkBoxedAnswer('try \\boxed{41}; no, \\boxed{42}', '42')).toEqual({
      answer: '42',
      correct: true,
    });
    expect(checkBoxedAnswer('\\boxed{42} then \\boxed{41}', '42')).toEqual({ answer: '41', correct: false });
  });

  it('is wrong without a box or without a response', () => {
    expect(checkBoxedAnswer('42', '42')).toEqual({ answer: null, correct: false });
    expect(checkBoxedAnswer(null, '42')).toEqual({ answer: null, correct: false });
  });
});
