// `loadConfig`: the configuration in three layers, defaults < environment < overrides, validated against the
// schema (core/config-schema.ts) with errors that name each bad field and its variable (core/config-options.ts).
// Nothing here reads `process.env`: callers pass the environment in.

import type { z } from 'zod';
import type { ConfigValueKind } from './config-option.js';
import { CONFIG_OPTIONS, ENV_VARS } from './config-options.js';
import { configSchema } from './config-schema.js';

/** The validated configuration that drives the gateway, the workers and the training run. */
export type OpenClawConfig = z.output<typeof configSchema>;
/** What overrides (a workflow start input, a test) may contain: every field optional. */
export type OpenClawConfigInput = z.input<typeof configSchema>;

export type ConfigResult = { ok: true; config: OpenClawConfig } | { ok: false; error: string };

/**
 * The validated configuration from environment variables and overrides (overrides win). Empty variables
 * count as unset. On failure, `error` names each bad field with its variable, e.g.
 * `judge.votes (OPENCLAW_JUDGE_VOTES): Too small: expected number to be >=1`.
 */
export function loadConfig(
  env: Readonly<Record<string, string | undefined>>,
  overrides: OpenClawConfigInput = {},
): ConfigResult {
  const merged = mergeDeep(configFromEnv(env), overrides);
  return parseConfig(merged);
}

/** Validates a whole input object (e.g. JSON from the Temporal UI) against the schema. */
export function parseConfig(input: unknown): ConfigResult {
  const result = configSchema.safeParse(input);
  if (result.success) return { ok: true, config: result.data };
  const problems = result.error.issues.map((issue) => {
    const key = issue.path.map(String).join('.');
    const env = (ENV_VARS as Record<string, string | undefined>)[key];
    return `${key === '' ? '(config)' : key}${env ? ` (${env})` : ''}: ${issue.message}`;
  });
  return { ok: false, error: `Invalid configuration: ${problems.join('; ')}` };
}

/** The options set in the environment, as a nested partial config (still unvalidated). */
export function configFromEnv(env: Readonly<Record<string, string | undefined>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const option of CONFIG_OPTIONS) {
    const raw = env[option.env]?.trim();
    if (raw === undefined || raw === '') continue;
    setPath(out, option.key.split('.'), parseEnvValue(option.kind, raw));
  }
  return out;
}

/** Numbers that do not parse stay text, so the schema reports them against the right field. */
function parseEnvValue(kind: ConfigValueKind, raw: string): unknown {
  switch (kind) {
    case 'string':
    case 'enum':
      return raw;
    case 'integer':
    case 'number':
      return toNumber(raw) ?? raw;
    case 'boolean':
      return BOOLEAN_TEXT[raw.toLowerCase()] ?? raw;
    case 'string-list':
      return raw
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
    case 'number-map': {
      const entries = raw
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '')
        .map((item) => {
          const eq = item.lastIndexOf('=');
          return [item.slice(0, eq).trim(), eq > 0 ? toNumber(item.slice(eq + 1).trim()) : null] as const;
        });
      return entries.every(([, n]) => n !== null) ? Object.fromEntries(entries) : raw;
    }
    case 'number-pair': {
      const numbers = raw.split(',').map((item) => toNumber(item.trim()));
      return numbers.every((n) => n !== null) ? numbers : raw;
    }
  }
}

const BOOLEAN_TEXT: Record<string, boolean | undefined> = { true: true, '1': true, false: false, '0': false };

function toNumber(text: string): number | null {
  if (text === '') return null;
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  const [head, ...rest] = path;
  if (head === undefined) return;
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  const child = isPlainObject(target[head]) ? (target[head] as Record<string, unknown>) : {};
  target[head] = child;
  setPath(child, rest, value);
}

/** `base` with `override` laid over it: objects merge key by key, anything else (arrays too) replaces. */
function mergeDeep(base: unknown, override: unknown): unknown {
  if (override === undefined) return base;
  if (!isPlainObject(base) || !isPlainObject(override)) return override;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) out[key] = mergeDeep(out[key], value);
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
