// One JSON object per line, each checked by a zod schema: a bad line is reported with its number
// (`source:line: field: what is wrong`), so a person can fix the file they wrote.
import type { z } from 'zod';

export function parseJsonLines<S extends z.ZodType>(
  text: string,
  source: string,
  schema: S,
  what: string,
): { line: number; value: z.output<S> }[] {
  const out: { line: number; value: z.output<S> }[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new Error(`${source}:${index + 1}: not JSON (${(error as Error).message})`);
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(
        `${source}:${index + 1}: ${issue?.path.join('.') || '(line)'}: ${issue?.message ?? 'invalid'}`,
      );
    }
    out.push({ line: index + 1, value: parsed.data });
  });
  if (out.length === 0) throw new Error(`${source} holds no ${what}`);
  return out;
}
