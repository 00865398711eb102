// Which environment variable sets each option of the configuration (core/config-schema.ts), how its text is
// read, and what it means: the table core/config.ts loads the environment with and core/config-doc.ts renders
// as docs/configuration.md. The rows live in three files by concern; their order is the page's.

import type { ConfigOption } from './config-option.js';
import { OBSERVABILITY_OPTIONS } from './config-options-observability.js';
import { SERVING_OPTIONS } from './config-options-serving.js';
import { STORAGE_OPTIONS } from './config-options-storage.js';
import { TRAINING_OPTIONS } from './config-options-training.js';

export const CONFIG_OPTIONS = [
  ...SERVING_OPTIONS,
  ...TRAINING_OPTIONS,
  ...STORAGE_OPTIONS,
  ...OBSERVABILITY_OPTIONS,
] as const satisfies readonly ConfigOption[];

export type ConfigKey = (typeof CONFIG_OPTIONS)[number]['key'];

/** The environment variable of every option, by dotted key. */
export const ENV_VARS = Object.fromEntries(CONFIG_OPTIONS.map((o) => [o.key, o.env])) as Record<
  ConfigKey,
  string
>;
