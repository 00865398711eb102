// The arith environment's calculator: + − × ÷, parentheses, unary minus and decimals, parsed by recursive
// descent (no eval). Errors are answers the policy reads, not exceptions the worker sees.

export type CalculatorResult = { ok: true; value: number } | { ok: false; error: string };

const TOKEN = /\s*(\d+(?:\.\d+)?|\.\d+|[-+*/()×÷x])/y;

function tokenize(expression: string): string[] | null {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  let rest = expression.trim();
  while (rest.length > 0) {
    TOKEN.lastIndex = 0;
    const match = TOKEN.exec(rest);
    if (!match?.[1]) return null;
    const token = match[1];
    tokens.push(token === '×' || token === 'x' ? '*' : token === '÷' ? '/' : token);
    rest = rest.slice(match[0].length).trimStart();
  }
  return tokens;
}

export function calculate(expression: string): CalculatorResult {
  if (expression.length > 500) return { ok: false, error: 'expression too long (500 characters at most)' };
  const tokens = tokenize(expression);
  if (!tokens || tokens.length === 0) return { ok: false, error: `cannot read "${expression}"` };
  let at = 0;
  const peek = () => tokens[at];
  const fail = (message: string): never => {
    throw new Error(message);
  };
  const primary = (): number => {
    const token = tokens[at++];
    if (token === undefined) return fail('the expression ends too early');
    if (token === '(') {
      const value = sum();
      if (tokens[at++] !== ')') fail('a parenthesis is not closed');
      return value;
    }
    if (token === '-') return -primary();
    if (token === '+') return primary();
    const value = Number(token);
    if (!Number.isFinite(value)) fail(`"${token}" is not a number`);
    return value;
  };
  const product = (): number => {
    let value = primary();
    for (let op = peek(); op === '*' || op === '/'; op = peek()) {
      at++;
      const right = primary();
      if (op === '/' && right === 0) fail('division by zero');
      value = op === '*' ? value * right : value / right;
    }
    return value;
  };
  const sum = (): number => {
    let value = product();
    for (let op = peek(); op === '+' || op === '-'; op = peek()) {
      at++;
      const right = product();
      value = op === '+' ? value + right : value - right;
    }
    return value;
  };
  try {
    const value = sum();
    if (at !== tokens.length) fail(`unexpected "${tokens[at]}"`);
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

/** Integers as they are; other numbers to 10 significant digits. */
export function formatNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(10)));
}
