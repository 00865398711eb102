// Tenants: whoever holds a gateway API key. Every session id the gateway records is scoped by the caller's
// tenant, as `<tenant>/<id>`, so two tenants using the same id land in two sessions and one tenant cannot reach
// another's. A tenant name never contains `/`, and unscoped ids never did (ids with one were hashed), so the
// tenant of any session id is read back from the id alone; ids recorded before tenants existed have none. Pure:
// workflows use it to count lineage by tenant.

/** The tenant of an open gateway (no keys configured): everyone who reaches it. */
export const LOCAL_TENANT = 'local';

/** A tenant name: what the keys file may name; never a `/`, so the tenant of a session id is unambiguous. */
export const TENANT_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

export const TENANT_NAME_RULE =
  'a tenant name is 1-64 letters, digits, ".", "_", "@" or "-", starting with a letter or digit';

/** `<tenant>/<id>`: the session id as recorded. */
export function scopedSessionId(tenant: string, id: string): string {
  if (!TENANT_NAME.test(tenant)) throw new Error(`invalid tenant name ${JSON.stringify(tenant)}`);
  return `${tenant}/${id}`;
}

/** The tenant and the client's own id of a recorded session id; tenant null for ids from before tenants. */
export function splitSessionId(sessionId: string): { tenant: string | null; id: string } {
  const slash = sessionId.indexOf('/');
  if (slash <= 0) return { tenant: null, id: sessionId };
  const tenant = sessionId.slice(0, slash);
  return TENANT_NAME.test(tenant)
    ? { tenant, id: sessionId.slice(slash + 1) }
    : { tenant: null, id: sessionId };
}

export function tenantOfSession(sessionId: string): string | null {
  return splitSessionId(sessionId).tenant;
}

/** How a missing tenant is shown: sessions recorded before tenants, and Track 2 rollouts. */
export const NO_TENANT = '-';

/**
 * Samples per tenant, from their ids (a Track 1 sample id starts with its session id; a Track 2 rollout's, or a
 * session's from before tenants, counts under `-`).
 */
export function samplesByTenant(sampleIds: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const sampleId of sampleIds) {
    const tenant = tenantOfSession(sampleId) ?? NO_TENANT;
    counts[tenant] = (counts[tenant] ?? 0) + 1;
  }
  return counts;
}

/** `alice 12, bob 3`: counts as a person reads them, largest first. */
export function formatTenantCounts(counts: Readonly<Record<string, number>>): string {
  return Object.entries(counts)
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
    .map(([tenant, count]) => `${tenant} ${count}`)
    .join(', ');
}

/** The id a client sees and sends back: the recorded id without its tenant. */
export function clientSessionId(sessionId: string | null): string | null {
  return sessionId === null ? null : splitSessionId(sessionId).id;
}

/** A key the gateway accepts and the tenant whose sessions it reaches (default: the key's name). */
export interface ApiKey {
  key: string;
  tenant?: string;
}
