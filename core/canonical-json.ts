// JSON that does not depend on how a client wrote it: object keys are sorted at every depth, so the same value
// serialises the same whatever order its keys came in. Pure (workflow-safe).
// Written as loops over sorted keys rather than entries filtered, sorted and mapped: a main turn hashes every
// message of its conversation with it, and the arrays those steps allocated were about a third of its cost.

/** JSON with object keys sorted at every depth (undefined members dropped, as JSON.stringify does). */
export function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let text = '[';
    for (let index = 0; index < value.length; index++) {
      if (index > 0) text += ',';
      text += canonicalJson(value[index] ?? null);
    }
    return `${text}]`;
  }
  const record = value as Record<string, unknown>;
  // The default sort compares UTF-16 code units, as `<` does on strings.
  const keys = Object.keys(record).sort();
  let text = '{';
  for (const key of keys) {
    const member = record[key];
    if (member === undefined) continue;
    if (text.length > 1) text += ',';
    text += `${JSON.stringify(key)}:${canonicalJson(member)}`;
  }
  return `${text}}`;
}
