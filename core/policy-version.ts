// The engine reports its weight version as a string (SGLang's `weight_version`: "default" until the first
// update, then whatever the publisher named it, e.g. "12" or "step-12"); turns record it as a number so
// workflows can compare versions.

/**
 * The policy version of a weight version: a number as it is, the number in a string ("12", "step-12"),
 * and 0 for a name without one (SGLang's initial "default" is the base weights). Null when the engine
 * reported none at all.
 */
export function parsePolicyVersion(value: unknown): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : 0;
  const text = String(value).trim();
  const whole = Number(text);
  if (text !== '' && Number.isFinite(whole) && whole >= 0) return whole;
  const trailing = /(\d+)$/.exec(text);
  return trailing?.[1] !== undefined ? Number(trailing[1]) : 0;
}

/**
 * The older of two weight versions read around one generation (the engine does not say which one produced
 * it): a sample never counts as fresher than it may be. Null when neither was read.
 */
export function olderWeightVersion(first: string | null, second: string | null): string | null {
  if (first === null) return second;
  if (second === null) return first;
  return (parsePolicyVersion(second) ?? 0) < (parsePolicyVersion(first) ?? 0) ? second : first;
}
