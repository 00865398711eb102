// Policies per tenant against one shared policy: how long until each tenant is served a version trained on
// its own feedback, and what the engine holds, with 1, 4 and 16 tenants.
//
//   npx tsx bench/tenant-adapters.ts [--tenants 1,4,16 (as --max 16)] [--maxTokens 8]
//   npm run bench:tenants
//
// For each number of tenants N, twice, on a fresh benchmark stack (a Temporal dev server, the reference engine
// with --trainer on the tiny random model, the control worker and the gateway with one key per tenant):
// - adapters: `adapters.tenants *`; each tenant sends one turn and a thumbs-down on it, all at once; each
//   tenant's own run trains its adapter (batch 1) and loads it; measured per tenant from its feedback to the
//   engine listing its adapter (its version 1), and for all N.
// - shared: one run for everyone (batch 1): the same N turns and thumbs-downs; measured per feedback until the
//   engine serves a version that includes it (the run's N-th version includes all), and for all N.
// Prints medians, p99, the time for all N, the engine's resident memory at the end, and the load average;
// never passes or fails on time (figures are quiet only under a load of 2).

import { readFile } from 'node:fs/promises';
import { reportLoad } from './support/machine-load.js';
import { type Stack, startStack, stopOnSignal } from './support/stack.js';
import { intOptions, median, ms, p99, printTable } from './support/stats.js';

const options = intOptions({ max: 16, maxTokens: 8 }, 'npx tsx bench/tenant-adapters.ts [options]');
const COUNTS = [1, 4, 16].filter((n) => n <= options.max);

let stack = null as Stack | null;
stopOnSignal(() => stack);

type Mode = 'adapters' | 'shared';

interface Figures {
  mode: Mode;
  tenants: number;
  perTenant: number[];
  all: number;
  rssMiB: number;
}

async function post(url: string, body: unknown, key: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

async function engineJson(url: string): Promise<Record<string, unknown>> {
  return (await (await fetch(url)).json()) as Record<string, unknown>;
}

async function residentMiB(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

async function measure(mode: Mode, tenants: number): Promise<Figures> {
  const keys = Array.from({ length: tenants }, (_, i) => `bench-key-${mode}-${tenants}-${i}`);
  stack = await startStack({
    config: {
      runId: `tenants-${mode}-${tenants}`,
      method: 'rl',
      training: { batchSize: 1 },
      gateway: { apiKeys: keys },
      ...(mode === 'adapters' && { adapters: { tenants: ['*'], rank: 8, maxLoaded: tenants } }),
    },
    gateway: true,
    engineOptions: mode === 'adapters' ? { adapterRank: 8, maxLoras: tenants } : {},
  });
  const gatewayUrl = stack.gateway?.url;
  if (!gatewayUrl) throw new Error('the stack has no gateway');
  const engineUrl = stack.engine.url;
  try {
    const turns = await Promise.all(
      keys.map(
        async (key, i) =>
          (await post(
            `${gatewayUrl}/v1/chat/completions`,
            {
              model: 'default',
              messages: [{ role: 'user', content: `Tenant ${i}: what is the capital of France?` }],
              max_tokens: options.maxTokens,
            },
            key,
            { 'X-Session-Id': `bench-${i}` },
          )) as { turn_id: string },
      ),
    );
    const sentAt: number[] = [];
    const servedAt: number[] = Array(tenants).fill(Number.NaN);
    const started = performance.now();
    await Promise.all(
      turns.map(async (turn, i) => {
        sentAt[i] = performance.now();
        await post(`${gatewayUrl}/v1/feedback`, { turn_id: turn.turn_id, rating: -1 }, keys[i] as string);
      }),
    );
    // Who is served what: adapters by the engine's list (each named after its tenant); the shared run by its
    // served version (a feedback is in once the version counts as many as were sent before it, at most N).
    const order = sentAt.map((at, i) => [at, i] as const).sort((a, b) => a[0] - b[0]);
    while (servedAt.some(Number.isNaN)) {
      const now = performance.now();
      if (mode === 'adapters') {
        const listed = ((await engineJson(`${engineUrl}/v1/models`)).data as { parent?: string }[]).filter(
          (model) => model.parent,
        ).length;
        // Tenant names are digests of their keys: count adapters, and credit them in feedback order.
        order.forEach(([, i], rank) => {
          if (rank < listed && Number.isNaN(servedAt[i] as number)) servedAt[i] = now;
        });
      } else {
        const version = Number((await engineJson(`${engineUrl}/model_info`)).weight_version);
        order.forEach(([, i], rank) => {
          if (rank < version && Number.isNaN(servedAt[i] as number)) servedAt[i] = now;
        });
      }
      if (now - started > 600_000) throw new Error(`${mode} with ${tenants} tenants: not served in 10 min`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return {
      mode,
      tenants,
      perTenant: servedAt.map((at, i) => at - (sentAt[i] as number)),
      all: Math.max(...servedAt) - started,
      rssMiB: await residentMiB(stack.engine.process.pid),
    };
  } finally {
    await stack.close();
    stack = null;
  }
}

const loadAtEnd = reportLoad('tenant adapters bench');
const results: Figures[] = [];
for (const tenants of COUNTS)
  for (const mode of ['adapters', 'shared'] as const) results.push(await measure(mode, tenants));
printTable(
  ['tenants', 'policy', 'feedback → own version served, median', 'p99', 'all N served', 'engine RSS'],
  results.map((r) => [
    String(r.tenants),
    r.mode === 'adapters' ? 'adapter each' : 'one shared',
    ms(median(r.perTenant)),
    ms(p99(r.perTenant)),
    ms(r.all),
    `${r.rssMiB.toFixed(0)} MiB`,
  ]),
);
loadAtEnd();
process.exit(0);
