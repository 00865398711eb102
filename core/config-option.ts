// One row of the option table (core/config-options.ts): a configuration option, the environment variable that
// sets it, how that variable's text is read, and what the option means on docs/configuration.md.

/** How an environment variable's text becomes the option's value. */
export type ConfigValueKind =
  | 'string'
  | 'integer'
  | 'number'
  | 'boolean'
  | 'enum'
  | 'string-list'
  | 'number-pair'
  /** `alice=2,bob=0.5`: names and numbers. */
  | 'number-map';

export interface ConfigOption {
  /** Dotted path into the config object. */
  key: string;
  env: string;
  kind: ConfigValueKind;
  description: string;
  /** Shown instead of the schema default when the default depends on something else. */
  defaultNote?: string;
}
