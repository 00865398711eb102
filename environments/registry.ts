// Environment kinds by name. The built-in kinds are listed here; other kinds (and tests) add themselves
// with `registerEnvironment(kind, factory)` before a registry is created. An env host builds one registry
// and serves every kind in it.

import { ArithEnvironment } from './arith/arith-environment.js';
import type { Environment, EnvironmentRegistry } from './environment.js';
import { type GuiConfigInput, GuiEnvironment } from './gui/gui-environment.js';
import type { SweConfigInput } from './swe/swe-config.js';
import { SweEnvironment } from './swe/swe-environment.js';
import type { TerminalConfigInput } from './terminal/terminal-config.js';
import { TerminalEnvironment } from './terminal/terminal-environment.js';
import type { ToolcallConfigInput } from './toolcall/toolcall-config.js';
import { ToolcallEnvironment } from './toolcall/toolcall-environment.js';

/** Options a kind may read (each kind documents its own); unknown options are ignored. */
export type EnvironmentOptions = Record<string, unknown>;

export type EnvironmentFactory = (options: EnvironmentOptions) => Environment;

const factories = new Map<string, EnvironmentFactory>([
  ['arith', () => new ArithEnvironment()],
  ['toolcall', (options) => new ToolcallEnvironment({ config: options.toolcall as ToolcallConfigInput })],
  ['gui', (options) => new GuiEnvironment({ config: options.gui as GuiConfigInput })],
  ['swe', (options) => new SweEnvironment({ config: options.swe as SweConfigInput })],
  ['terminal', (options) => new TerminalEnvironment({ config: options.terminal as TerminalConfigInput })],
]);

/** Adds a kind (or replaces one with the same name). */
export function registerEnvironment(kind: string, factory: EnvironmentFactory): void {
  factories.set(kind, factory);
}

export function environmentKinds(): string[] {
  return [...factories.keys()].sort();
}

/** One instance of every registered kind (or of `kinds` only). */
export function createEnvironmentRegistry(
  options: EnvironmentOptions = {},
  kinds: readonly string[] = environmentKinds(),
): EnvironmentRegistry {
  const registry = new Map<string, Environment>();
  for (const kind of kinds) {
    const factory = factories.get(kind);
    if (!factory)
      throw new Error(`unknown environment kind "${kind}"; known: ${environmentKinds().join(', ')}`);
    const environment = factory(options);
    if (environment.kind !== kind)
      throw new Error(`factory for "${kind}" made a "${environment.kind}" environment`);
    registry.set(kind, environment);
  }
  return registry;
}
