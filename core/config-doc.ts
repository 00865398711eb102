// docs/configuration.md, rendered from the option table and the schema's defaults so the page cannot drift
// from the code (test/core/config-doc.test.ts compares them).

import type { ConfigOption } from './config-option.js';
import { CONFIG_OPTIONS } from './config-options.js';
import { configSchema } from './config-schema.js';

function valueAt(config: unknown, key: string): unknown {
  let value: unknown = config;
  for (const part of key.split('.')) value = (value as Record<string, unknown> | undefined)?.[part];
  return value;
}

function formatDefault(option: ConfigOption, defaults: unknown): string {
  if (option.defaultNote) return option.defaultNote;
  const value = valueAt(defaults, option.key);
  if (Array.isArray(value)) return value.length === 0 ? '(none)' : `\`${value.join(',')}\``;
  if (value === '') return '(empty)';
  return `\`${String(value)}\``;
}

/** A Markdown table with padded columns, the way Biome formats one. */
function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    `| ${widths.map((width, column) => (cells[column] ?? '').padEnd(width)).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)];
}

/** The Markdown of docs/configuration.md. */
export function renderConfigurationDoc(): string {
  const defaults = configSchema.parse({});
  const rows = CONFIG_OPTIONS.map((option) => [
    `\`${option.key}\``,
    `\`${option.env}\``,
    formatDefault(option, defaults),
    option.description,
  ]);
  return [
    '# Configuration',
    '',
    '<!-- Generated from the option table (core/config-options.ts) by core/config-doc.ts. Regenerate with',
    '     UPDATE_DOCS=1 npx vitest run test/core/config-doc.test.ts -->',
    '',
    'One configuration object drives the gateway, the workers and the training run (`core/config.ts`).',
    '`loadConfig(env, overrides)` builds it in three layers: the defaults below, then the environment',
    'variables, then overrides (a workflow start input or a test), and validates the result; an error names',
    'each bad field and its variable. Empty variables count as unset; lists are comma-separated. Unknown',
    'fields in overrides are rejected, so a typo is an error rather than a silently ignored setting.',
    '',
    ...markdownTable(['Option', 'Variable', 'Default', 'Meaning'], rows),
    '',
    'Defaults follow the original OpenClaw-RL Track 1 scripts (clip 0.2 / 0.28 for every method, KL and entropy',
    'weights 0, Adam 1e-5 with weight decay 0.1 and betas 0.9 / 0.98, batches of 16, judge temperature 0.6).',
    'The original OPD script left the upper clip at 0.2 only because it did not set it; here all methods share',
    '0.28.',
    '',
    'The KL estimator (`loss.klType`) is sent to the trainer as named. Per response token, with r = log π_ref −',
    'log π_θ, `k1` is −r, `k2` is r²/2, `k3` is exp(r) − r − 1 (unbiased, never negative) and `low_var_kl` is that',
    'k3 clamped to [−10, 10], so one very unlikely token cannot dominate the batch (`kl_penalty` in',
    "engine/openclaw_engine/losses.py, as slime's `compute_approx_kl`). The reference engine and slime train all",
    'four. The Tinker sidecar trains no KL term at all, so a configuration with the Tinker trainer and',
    '`loss.klCoef` above 0 is refused, and a Tinker step with a KL coefficient above 0 is refused rather than',
    'trained without it. Earlier versions sent `k3` as `low_var_kl`: a configuration, start input or `reconfigure`',
    'that said `k3` now trains the unclamped k3; say `low_var_kl` (the default) to keep the clamped estimator.',
    'The KL term trains only when `loss.klCoef` is above 0; at the default 0 it adds nothing to the loss (a',
    'trainer may still report it as `kl_loss`).',
    '',
  ].join('\n');
}
