// Deterministic reply scorers: a checkable rule scores a reply in [0, 1] with no model at all. They stand in for a
// judge where none can judge (the embedded tiny model), in the publish gate, `openclaw-rl eval` and the learning
// demo. They are checkers of a surface rule, not judges of quality: docs/evaluation.md says what they show.

export interface ReplyScorer {
  /** `style:<rule>`, as configured (training.gate.scorer, `eval --scorer`). */
  readonly name: string;
  /** What the rule rewards, in one line, for reports and the dashboard. */
  readonly description: string;
  /** The reply's score in [0, 1]. */
  score(reply: string): number;
}

/** The share of a reply's letters that are vowels (a, e, i, o, u, y; case-insensitive); 0 without letters. */
const vowels: ReplyScorer = {
  name: 'style:vowels',
  description: "the share of the reply's letters that are vowels",
  score(reply) {
    const letters = reply.match(/\p{L}/gu) ?? [];
    if (letters.length === 0) return 0;
    return letters.filter((c) => /[aeiouy]/i.test(c)).length / letters.length;
  },
};

export const REPLY_SCORERS: Readonly<Record<string, ReplyScorer>> = {
  [vowels.name]: vowels,
};

/** The scorer a `style:<rule>` name configures, or null when there is none by that name. */
export function replyScorer(name: string): ReplyScorer | null {
  return REPLY_SCORERS[name] ?? null;
}
