// Which policy serves a request: a tenant with an adapter of its own (core/tenant-adapters.ts) is served by it
// once its run has published one (before that, by the base, which is what its adapter starts from: a fresh
// LoRA adds nothing); everyone else is served as before. Adapters are private: a request that names another
// tenant's adapter as its model is answered as if no such model existed, and `GET /v1/models` lists only the
// caller's own. What the engine holds is read from its `GET /v1/models` (vLLM's and the reference engine's list
// each adapter with its folder as `root`), cached for a moment so serving does not wait on it.

import { z } from 'zod';
import { type AdapterSettings, hasOwnAdapter } from '../core/tenant-adapters.js';
import type { EngineAdapter } from '../engines/engine-adapter.js';
import { OpenAIError } from './openai-errors.js';

/** How long a read of the engine's adapters is reused for routing. */
const DEFAULT_MAX_AGE_MS = 1_000;

const modelListSchema = z.object({
  data: z.array(
    z.looseObject({
      id: z.string(),
      root: z.string().nullish(),
      parent: z.string().nullish(),
    }),
  ),
});

export interface EngineModels {
  /** The base's model id (what vLLM insists on), or null when the engine lists none. */
  base: string | null;
  /** Loaded adapters by name: the folder each was loaded from. */
  adapters: Map<string, string>;
}

/** The engine's `GET /v1/models` answer, read as a base and its adapters (`parent` set). */
export function engineModelsOf(answer: unknown): EngineModels {
  const parsed = modelListSchema.safeParse(answer);
  const adapters = new Map<string, string>();
  let base: string | null = null;
  if (!parsed.success) return { base, adapters };
  for (const model of parsed.data.data) {
    if (model.parent) adapters.set(model.id, model.root ?? '');
    else base ??= model.id;
  }
  return { base, adapters };
}

/** The version of a published adapter, from its folder `<checkpoints>/<run>/<incarnation>/v<N>/adapter`. */
export function adapterVersionOf(folder: string): number | null {
  const match = /[/\\]v(\d+)[/\\]adapter[/\\]?$/.exec(folder);
  return match ? Number(match[1]) : null;
}

export interface AdapterRoute {
  /** The adapter the engine is asked for; null: the base. */
  adapter: string | null;
  /** The model id the engine gets (the adapter's name, or the base's id); null: the client's own is kept. */
  model: string | null;
  /** The version of the policy that serves, read before the engine is asked (0 for the base). */
  versionBefore: number;
}

/** What serves a request: the model id the engine is asked for (null: the client's), and the tenant's own policy. */
export interface TenantRoute {
  model: string | null;
  /** Set for a tenant with an adapter of its own: its turns record that policy's version. */
  own: AdapterRoute | null;
}

export class TenantRouting {
  private cached: { models: EngineModels; at: number } | null = null;

  constructor(
    readonly settings: AdapterSettings,
    private readonly engine: EngineAdapter,
    private readonly maxAgeMs = DEFAULT_MAX_AGE_MS,
  ) {}

  /** Whether any tenant has an adapter (otherwise nothing here applies). */
  get enabled(): boolean {
    return this.settings.tenants.length > 0;
  }

  /**
   * The route of a request by `tenant` that names `model`; for a tenant without an adapter, the base (whose
   * turns record the engine's version, as without adapters). Throws the 404 a client gets for another tenant's
   * adapter. The engine is always told which model: one holding adapters refuses names it does not know.
   */
  async route(tenant: string, model: string | undefined, signal: AbortSignal): Promise<TenantRoute> {
    if (!this.enabled) return { model: null, own: null };
    const models = await this.models(signal, this.maxAgeMs);
    this.refuseForeign(tenant, model, models);
    if (!hasOwnAdapter(this.settings, tenant)) return { model: models.base, own: null };
    const own = this.ownRoute(tenant, models);
    return { model: own.model, own };
  }

  private ownRoute(tenant: string, models: EngineModels): AdapterRoute {
    const folder = models.adapters.get(tenant);
    if (folder === undefined) return { adapter: null, model: models.base, versionBefore: 0 };
    return { adapter: tenant, model: tenant, versionBefore: adapterVersionOf(folder) ?? 0 };
  }

  /** The adapter's version now (fresh): an answer that does not name its version records the older read. */
  async adapterVersion(adapter: string, signal: AbortSignal): Promise<number | null> {
    const folder = (await this.models(signal, 0)).adapters.get(adapter);
    return folder === undefined ? null : adapterVersionOf(folder);
  }

  /** The engine's model list as `tenant` may see it: the base and the tenant's own adapter. */
  visibleModels(tenant: string, answer: unknown): unknown {
    if (!this.enabled) return answer;
    const parsed = modelListSchema.safeParse(answer);
    if (!parsed.success) return answer;
    const data = parsed.data.data.filter((model) => !model.parent || model.id === tenant);
    return { ...(answer as Record<string, unknown>), data };
  }

  private refuseForeign(tenant: string, model: string | undefined, models: EngineModels): void {
    if (!model) return;
    // SGLang's `<base>:<adapter>` spelling names the adapter after the colon.
    const names = [model, model.slice(model.lastIndexOf(':') + 1)];
    const foreign = names.some(
      (name) =>
        name !== tenant &&
        (models.adapters.has(name) || (name !== '*' && this.settings.tenants.includes(name))),
    );
    if (foreign)
      throw new OpenAIError(
        404,
        `The model \`${model}\` does not exist.`,
        'invalid_request_error',
        'model',
        'model_not_found',
      );
  }

  private async models(signal: AbortSignal, maxAgeMs: number): Promise<EngineModels> {
    const now = Date.now();
    if (this.cached && now - this.cached.at <= maxAgeMs) return this.cached.models;
    const models = engineModelsOf(await this.engine.listModels(signal));
    this.cached = { models, at: now };
    return models;
  }
}
