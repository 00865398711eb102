// Policies per tenant: a tenant named in `adapters.tenants` (or every tenant, with `*`) has a LoRA adapter of its
// own on the shared base. Its turns and feedback go to a training run of their own, `<runId>~<tenant>`, which
// trains only that adapter and publishes it to the engine under the tenant's name; its requests are served by
// it. `~` never appears in a configured run id, so an adapter's run id cannot collide with one, and the tenant
// of such a run is read back from its id alone. Pure: the gateway, activities and workflows share it.

import { TENANT_NAME, tenantOfSession } from './tenant.js';

/** A tenant name, or `*` (every tenant). */
export const ADAPTER_TENANT_PATTERN = new RegExp(`^(\\*|${TENANT_NAME.source.slice(1, -1)})$`);

export const ADAPTER_BASE_CHANGE_POLICIES = ['keep', 'reset'] as const;
export type AdapterBaseChangePolicy = (typeof ADAPTER_BASE_CHANGE_POLICIES)[number];

const SEPARATOR = '~';

export interface AdapterSettings {
  tenants: readonly string[];
}

/** Whether `tenant` has an adapter of its own. */
export function hasOwnAdapter(settings: AdapterSettings, tenant: string | null): tenant is string {
  if (tenant === null) return false;
  return settings.tenants.includes('*') || settings.tenants.includes(tenant);
}

/** The run id of a tenant's adapter: `<runId>~<tenant>`. */
export function adapterRunId(runId: string, tenant: string): string {
  if (!TENANT_NAME.test(tenant)) throw new Error(`invalid tenant name ${JSON.stringify(tenant)}`);
  return `${runId}${SEPARATOR}${tenant}`;
}

/** The shared run id and the tenant of an adapter's run id; null for any other run id. */
export function parseAdapterRunId(runId: string): { sharedRunId: string; tenant: string } | null {
  const at = runId.lastIndexOf(SEPARATOR);
  if (at <= 0) return null;
  const tenant = runId.slice(at + 1);
  return TENANT_NAME.test(tenant) ? { sharedRunId: runId.slice(0, at), tenant } : null;
}

/** The name an adapter is loaded under on the policy engine: its tenant's. */
export function adapterName(runId: string): string | null {
  return parseAdapterRunId(runId)?.tenant ?? null;
}

/** The run a (tenant-scoped) session's turns train: its tenant's adapter run, else the shared run. */
export function runIdOfSession(settings: AdapterSettings, runId: string, sessionId: string): string {
  const tenant = tenantOfSession(sessionId);
  return hasOwnAdapter(settings, tenant) ? adapterRunId(runId, tenant) : runId;
}
