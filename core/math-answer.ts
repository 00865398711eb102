// Final-answer checking for math tasks (the toolcall environment, spec 10.4): take the content of the LAST
// `\boxed{…}` in a response and decide whether it is mathematically the same as the label. Numbers are
// compared exactly as rationals (so `\frac{1}{2}`, `1/2`, `0.5` and `\dfrac12` agree, and `1,000` is 1000);
// small arithmetic (`2^{10}`, `3\cdot 4`) is evaluated; tuples compare element by element; anything else
// (`\sqrt{2}`, `x+1`) compares as a normalised string. Pure functions, no Node APIs.

/** The content of the last `\boxed{…}` (or `\fbox{…}`) with balanced braces, or null when there is none. */
export function lastBoxedContent(text: string): string | null {
  const pattern = /\\(?:boxed|fbox)\s*\{/g;
  let lastOpen = -1;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    lastOpen = match.index + match[0].length;
  }
  if (lastOpen >= 0) return balancedGroup(text, lastOpen - 1);
  // `\boxed 5`: the short form with one token and no braces.
  const short = [...text.matchAll(/\\boxed\s+([^\s$]+)/g)].at(-1);
  return short?.[1] ?? null;
}

/** The text inside the brace group that opens at `openIndex`, or null when it never closes. */
function balancedGroup(text: string, openIndex: number): string | null {
  let depth = 0;
  for (let i = openIndex; i < text.length; i += 1) {
    const char = text[i];
    if (char === '\\') {
      i += 1; // `\{` and `\}` are literal braces
      continue;
    }
    if (char === '{') depth += 1;
    else if (char === '}') {
      depth -= 1;
      if (depth === 0) return text.slice(openIndex + 1, i);
    }
  }
  return null;
}

/** An answer's text with presentation stripped: spacing, `\left`/`\right`, `\text{}`, `$`, units of degree and %. */
export function normaliseAnswer(raw: string): string {
  let text = raw.trim().replace(/\.$/, '');
  text = text.replace(/^\$+|(?<!\\)\$+$/g, '');
  text = unwrapCommand(text, ['text', 'textbf', 'mathrm', 'mathbf', 'mbox', 'displaystyle']);
  text = text
    .replace(/\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big)(?![a-zA-Z])/g, '')
    .replace(/\\[,;:! ]/g, '')
    .replace(/\\(?:quad|qquad)(?![a-zA-Z])/g, '')
    .replace(/\\displaystyle/g, '')
    .replace(/\\[dt]frac/g, '\\frac')
    .replace(/\^\s*\{?\s*\\circ\s*\}?/g, '')
    .replace(/°/g, '')
    .replace(/\\%|%/g, '')
    .replace(/\\\$/g, '')
    .replace(/π/g, '\\pi')
    .replace(/\s+/g, '');
  // `x=5` → `5`: a single variable on the left names the answer, it is not part of it.
  const assignment = /^[a-zA-Z](?:_\{?\w+\}?)?=(.+)$/.exec(text);
  if (assignment?.[1] !== undefined) text = assignment[1];
  text = text.replace(/\.$/, '').replace(/^\+/, '');
  // `\frac12` and `\sqrt2`: the brace-less short forms.
  text = text.replace(/\\frac(\d)(\d)/g, '\\frac{$1}{$2}').replace(/\\sqrt(\w)/g, '\\sqrt{$1}');
  return text;
}

/** Replaces `\name{x}` by `x` for each command name, keeping nested groups. */
function unwrapCommand(text: string, names: readonly string[]): string {
  let result = text;
  for (const name of names) {
    const opener = `\\${name}{`;
    let index = result.indexOf(opener);
    while (index >= 0) {
      const inner = balancedGroup(result, index + opener.length - 1);
      if (inner === null) break;
      result = result.slice(0, index) + inner + result.slice(index + opener.length + inner.length + 1);
      index = result.indexOf(opener);
    }
  }
  return result;
}

/** An exact rational number; `denominator` is always positive and the fraction reduced. */
export interface Rational {
  numerator: bigint;
  denominator: bigint;
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

function rational(numerator: bigint, denominator: bigint): Rational {
  if (denominator === 0n) throw new RangeError('division by zero');
  const sign = denominator < 0n ? -1n : 1n;
  const divisor = gcd(numerator, denominator) || 1n;
  return { numerator: (sign * numerator) / divisor, denominator: (sign * denominator) / divisor };
}

/** `\frac{a}{b}` → `((a)/(b))`, innermost first, so the expression parser sees plain arithmetic. */
function expandFractions(text: string): string | null {
  let result = text;
  for (let index = result.lastIndexOf('\\frac{'); index >= 0; index = result.lastIndexOf('\\frac{')) {
    const top = balancedGroup(result, index + 5);
    if (top === null) return null;
    const bottomOpen = index + 5 + top.length + 2;
    if (result[bottomOpen] !== '{') return null;
    const bottom = balancedGroup(result, bottomOpen);
    if (bottom === null) return null;
    result = `${result.slice(0, index)}((${top})/(${bottom}))${result.slice(bottomOpen + bottom.length + 2)}`;
  }
  return result;
}

/** A number written with thousands separators (`1,234,567`), without them; null when it is not one. */
function withoutThousandsSeparators(text: string): string | null {
  return /^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(text) ? text.replace(/,/g, '') : null;
}

// Bounds that keep a hostile answer (`9^9^9^9`) from eating the CPU.
const MAX_EXPONENT = 4096n;
const MAX_DIGITS = 4096;

/** The exact value of a normalised answer made of numbers, + − × ÷, powers and parentheses; null otherwise. */
export function evaluateNumeric(normalised: string): Rational | null {
  const expanded = expandFractions(withoutThousandsSeparators(normalised) ?? normalised);
  if (expanded === null) return null;
  const source = expanded
    .replace(/\\cdot|\\times|×/g, '*')
    .replace(/\\div|÷/g, '/')
    .replace(/[{[]/g, '(')
    .replace(/[}\]]/g, ')');
  if (!/^[\d.+\-*/^()]+$/.test(source)) return null;
  try {
    const parser = new ArithmeticParser(source);
    const value = parser.expression();
    return parser.atEnd() ? value : null;
  } catch {
    return null;
  }
}

/** Recursive descent over `+ - * / ^ ( )` and decimal numbers, exact in BigInt rationals. */
class ArithmeticParser {
  private position = 0;
  constructor(private readonly source: string) {}

  atEnd(): boolean {
    return this.position === this.source.length;
  }

  expression(): Rational {
    let value = this.term();
    for (let op = this.peek(); op === '+' || op === '-'; op = this.peek()) {
      this.position += 1;
      const right = this.term();
      value =
        op === '+'
          ? rational(
              value.numerator * right.denominator + right.numerator * value.denominator,
              value.denominator * right.denominator,
            )
          : rational(
              value.numerator * right.denominator - right.numerator * value.denominator,
              value.denominator * right.denominator,
            );
    }
    return value;
  }

  private term(): Rational {
    let value = this.unary();
    for (let op = this.peek(); op === '*' || op === '/'; op = this.peek()) {
      this.position += 1;
      const right = this.unary();
      value =
        op === '*'
          ? rational(value.numerator * right.numerator, value.denominator * right.denominator)
          : rational(value.numerator * right.denominator, value.denominator * right.numerator);
    }
    return value;
  }

  private unary(): Rational {
    const op = this.peek();
    if (op === '-' || op === '+') {
      this.position += 1;
      const value = this.unary();
      return op === '-' ? rational(-value.numerator, value.denominator) : value;
    }
    return this.power();
  }

  private power(): Rational {
    const base = this.atom();
    if (this.peek() !== '^') return base;
    this.position += 1;
    const exponent = this.unary(); // right-associative: 2^3^2 = 2^9
    if (exponent.denominator !== 1n) throw new RangeError('non-integer exponent');
    const magnitude = exponent.numerator < 0n ? -exponent.numerator : exponent.numerator;
    if (magnitude > MAX_EXPONENT) throw new RangeError('exponent too large');
    const numerator = base.numerator ** magnitude;
    const denominator = base.denominator ** magnitude;
    if (numerator.toString().length > MAX_DIGITS || denominator.toString().length > MAX_DIGITS) {
      throw new RangeError('result too large');
    }
    return exponent.numerator < 0n ? rational(denominator, numerator) : rational(numerator, denominator);
  }

  private atom(): Rational {
    if (this.peek() === '(') {
      this.position += 1;
      const value = this.expression();
      if (this.peek() !== ')') throw new SyntaxError('missing )');
      this.position += 1;
      return value;
    }
    const match = /^(\d+(?:\.\d*)?|\.\d+)/.exec(this.source.slice(this.position));
    if (match?.[1] === undefined) throw new SyntaxError(`unexpected ${this.peek() ?? 'end'}`);
    this.position += match[1].length;
    return decimalToRational(match[1]);
  }

  private peek(): string | undefined {
    return this.source[this.position];
  }
}

function decimalToRational(text: string): Rational {
  const [whole = '', fraction = ''] = text.split('.');
  if (whole.length + fraction.length > MAX_DIGITS) throw new RangeError('number too long');
  return rational(BigInt(`${whole || '0'}${fraction}`), 10n ** BigInt(fraction.length));
}

/** Splits on commas outside any brackets or braces. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (char === '(' || char === '[' || char === '{') depth += 1;
    else if (char === ')' || char === ']' || char === '}') depth -= 1;
    else if (char === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

interface AnswerList {
  open: string;
  close: string;
  items: string[];
}

/** A tuple, interval or list (`(1,2)`, `[0,1)`, `1,2,3`, `\{1,2\}`), or null for a single answer. */
function asList(normalised: string): AnswerList | null {
  if (withoutThousandsSeparators(normalised) !== null) return null;
  const set = /^\\\{(.*)\\\}$/.exec(normalised);
  if (set?.[1] !== undefined) return { open: '{', close: '}', items: splitTopLevel(set[1]) };
  const bracketed = /^([([])(.*)([)\]])$/.exec(normalised);
  if (bracketed?.[2] !== undefined) {
    const items = splitTopLevel(bracketed[2]);
    if (items.length > 1) return { open: bracketed[1] ?? '', close: bracketed[3] ?? '', items };
    return null;
  }
  const items = splitTopLevel(normalised);
  return items.length > 1 ? { open: '', close: '', items } : null;
}

function sameRational(a: Rational, b: Rational): boolean {
  return a.numerator === b.numerator && a.denominator === b.denominator;
}

/** One normalised answer against another: exact value when both are numeric, else the same text. */
function singleEquivalent(predicted: string, label: string): boolean {
  if (predicted === label) return true;
  const predictedValue = evaluateNumeric(predicted);
  const labelValue = evaluateNumeric(label);
  if (predictedValue !== null && labelValue !== null) return sameRational(predictedValue, labelValue);
  // Symbolic: ignore grouping braces that change nothing (`\sqrt{2}` vs `\sqrt2` were unified already).
  return stripRedundantBraces(predicted) === stripRedundantBraces(label);
}

function stripRedundantBraces(text: string): string {
  return text.replace(/\^\{(\w)\}/g, '^$1').replace(/_\{(\w)\}/g, '_$1');
}

/** Whether two answers (raw text, e.g. a `\boxed{}` content and a label) are mathematically the same. */
export function answersEquivalent(predicted: string, label: string): boolean {
  const a = normaliseAnswer(predicted);
  const b = normaliseAnswer(label);
  if (a.length === 0 || b.length === 0) return false;
  const listA = asList(a);
  const listB = asList(b);
  if (listA === null && listB === null) return singleEquivalent(a, b);
  if (listA === null || listB === null) return false;
  if (listA.items.length !== listB.items.length) return false;
  // A bare list matches any bracket; two bracketed ones must agree (an interval's ends matter).
  const bracketsAgree =
    listA.open === '' || listB.open === '' || (listA.open === listB.open && listA.close === listB.close);
  if (!bracketsAgree) return false;
  if (listA.open === '{' && listB.open === '{') {
    const remaining = [...listB.items];
    return listA.items.every((item) => {
      const match = remaining.findIndex((candidate) => singleEquivalent(item, candidate));
      if (match < 0) return false;
      remaining.splice(match, 1);
      return true;
    });
  }
  return listA.items.every((item, index) => singleEquivalent(item, listB.items[index] ?? ''));
}

/** The verdict on a response: the last boxed answer and whether it matches the label. */
export interface BoxedAnswerCheck {
  /** The last `\boxed{}` content, or null when the response has none. */
  answer: string | null;
  correct: boolean;
}

export function checkBoxedAnswer(response: string | null, label: string): BoxedAnswerCheck {
  const answer = response === null ? null : lastBoxedContent(response);
  return { answer, correct: answer !== null && answersEquivalent(answer, label) };
}
