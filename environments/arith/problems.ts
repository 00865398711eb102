// Arithmetic word problems, generated from their id (`arith-<k>`) so every host loads the same task without
// a data file: a small linear congruential generator seeded by k picks a template and its numbers.

export interface ArithProblem {
  question: string;
  /** The calculation that solves it, in the calculator's syntax. */
  expression: string;
  answer: number;
}

function generator(seed: number): (min: number, max: number) => number {
  let state = (seed * 2654435761 + 12345) >>> 0;
  return (min, max) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return min + (state % (max - min + 1));
  };
}

const NAMES = ['Ada', 'Bo', 'Chen', 'Dana', 'Eli', 'Fay', 'Gus', 'Hana'];

export function arithProblem(k: number): ArithProblem {
  const pick = generator(k);
  const name = NAMES[pick(0, NAMES.length - 1)] ?? 'Ada';
  const a = pick(2, 19);
  const b = pick(2, 19);
  const c = pick(1, 30);
  switch (k % 5) {
    case 0:
      return {
        question: `${name} has ${a} boxes with ${b} apples in each and ${c} loose apples. How many apples does ${name} have?`,
        expression: `${a}*${b}+${c}`,
        answer: a * b + c,
      };
    case 1:
      return {
        question: `A train travels ${a * 10} km every hour for ${b} hours and then ${c} km more. How many km does it travel in all?`,
        expression: `${a * 10}*${b}+${c}`,
        answer: a * 10 * b + c,
      };
    case 2: {
      const bill = a * b + c;
      return {
        question: `${name} buys ${a} pens at ${b} dollars each and pays with ${bill} dollars. How many dollars of change does ${name} get?`,
        expression: `${bill}-${a}*${b}`,
        answer: c,
      };
    }
    case 3:
      return {
        question: `${a} friends share ${a * b} stickers equally, and each friend then gets ${c} more. How many stickers does each friend have?`,
        expression: `${a * b}/${a}+${c}`,
        answer: b + c,
      };
    default:
      return {
        question: `A shelf holds ${a} rows of ${b} books. ${name} takes ${Math.min(c, a * b)} books away. How many books are left?`,
        expression: `${a}*${b}-${Math.min(c, a * b)}`,
        answer: a * b - Math.min(c, a * b),
      };
  }
}
