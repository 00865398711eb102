// The dashboard's routes: the page and its scripts (public: the page asks for the API key and sends it as a
// bearer), and a JSON API under /dashboard/api that the gateway's key check guards like /v1 (401 without a key
// when keys are configured). Every answer is scoped to the caller's tenant: the shared run for everyone, a
// tenant's adapter run and sessions for that tenant only.

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Caller } from '../auth.js';
import { invalidRequest, notFound } from '../openai-errors.js';
import { AgenticStepsViews } from './agentic-steps-view.js';
import { agenticRuns } from './agentic-view.js';
import type { DashboardSources } from './dashboard-sources.js';
import { RunViews } from './run-view.js';
import { tenantSessions } from './session-view.js';

const require = createRequire(import.meta.url);
const pageFile = (name: string): string => fileURLToPath(new URL(`./page/${name}`, import.meta.url));

/** What the page loads, and from where (uPlot from its package: nothing comes from a CDN). */
const ASSETS: Record<string, { file: () => string; type: string }> = {
  '/dashboard': { file: () => pageFile('index.html'), type: 'text/html; charset=utf-8' },
  '/dashboard/': { file: () => pageFile('index.html'), type: 'text/html; charset=utf-8' },
  '/dashboard/app.js': { file: () => pageFile('app.js'), type: 'text/javascript; charset=utf-8' },
  '/dashboard/uPlot.iife.min.js': {
    file: () => require.resolve('uplot/dist/uPlot.iife.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
  '/dashboard/uPlot.min.css': {
    file: () => require.resolve('uplot/dist/uPlot.min.css'),
    type: 'text/css; charset=utf-8',
  },
};

/** Paths anyone may load: the page holds no data, the API behind it needs the key. */
export const DASHBOARD_PUBLIC_ROUTES: readonly string[] = Object.keys(ASSETS);

const runParamsSchema = z.object({ runId: z.string().min(1).max(200) });
const sessionsQuerySchema = z.strictObject({
  sessions: z.coerce.number().int().min(1).max(200).default(30),
  turns: z.coerce.number().int().min(1).max(500).default(50),
});

function parsed<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const param = [where, ...(issue?.path ?? []).map(String)].join('.');
  throw invalidRequest(`invalid ${param}: ${issue?.message ?? 'malformed'}`, param, 'invalid_value');
}

export function registerDashboard(
  routes: FastifyInstance,
  sources: DashboardSources,
  callerOf: (request: FastifyRequest) => Caller,
): void {
  const runs = new RunViews(sources);
  const agenticSteps = new AgenticStepsViews(sources.store);

  for (const [path, asset] of Object.entries(ASSETS))
    routes.get(path, async (_request, reply) => {
      reply.type(asset.type).header('cache-control', 'no-cache');
      return readFile(asset.file());
    });

  routes.get('/dashboard/api/runs', async (request) => {
    const { tenant } = callerOf(request);
    return { object: 'list', tenant, data: await runs.visibleRuns(tenant) };
  });

  routes.get('/dashboard/api/runs/:runId', async (request) => {
    const { runId } = parsed(runParamsSchema, request.params, 'path');
    const { tenant } = callerOf(request);
    const visible = (await runs.visibleRuns(tenant)).find((run) => run.runId === runId);
    // Another tenant's adapter run is answered like a run that does not exist.
    if (!visible) throw notFound(`no training run ${runId}`);
    return { object: 'training_run', ...(await runs.view(visible.runId, visible.tenant)) };
  });

  routes.get('/dashboard/api/sessions', async (request) => {
    const limits = parsed(sessionsQuerySchema, request.query, 'query');
    const { tenant } = callerOf(request);
    return { object: 'list', tenant, data: await tenantSessions(sources.store, tenant, limits) };
  });

  routes.get('/dashboard/api/agentic', async () => ({
    object: 'list',
    data: await agenticRuns(sources.temporal),
  }));

  // A Track 2 run is the operator's, not a tenant's (like the shared run): every key may read its steps.
  routes.get('/dashboard/api/agentic/:runId/steps', async (request) => {
    const { runId } = parsed(runParamsSchema, request.params, 'path');
    const view = await agenticSteps.view(runId);
    if (!view) throw notFound(`no agentic run ${runId}`);
    return { object: 'agentic_steps', ...view };
  });
}
