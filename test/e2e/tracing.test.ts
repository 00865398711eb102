// One trace from a gateway request into Temporal, received by a real OpenTelemetry Collector (built from
// scripts/otel-collector/, OTLP/HTTP in, spans to a JSON-lines file): the request's span is the parent of the
// relay's signal-with-start of the session workflow, whose run, scoring child and judge activities follow in
// the same trace; the scored sample's hand-off to the training run arrives there as a signal in that trace,
// and the training step that used it runs in the training run's trace.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { startGateway } from '../../gateway/main.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { type ProcessTracing, startProcessTracing } from '../../temporal/tracing.js';
import { createControlWorker } from '../../workers/control-worker.js';
import { untilTrainingStatus } from '../support/control-stack.js';
import { type FakeJudge, startFakeJudge } from '../support/fake-judge-server.js';
import { freePort } from '../support/free-port.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { waitFor } from '../support/wait-for.js';

const collectorScript = fileURLToPath(new URL('../../scripts/otel-collector.sh', import.meta.url));

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  service: string;
}

/** Every span the collector's file exporter wrote (OTLP JSON, one export request per line). */
function spansIn(file: string): Span[] {
  if (!existsSync(file)) return [];
  const spans: Span[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const request = JSON.parse(line) as {
      resourceSpans: Array<{
        resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
        scopeSpans: Array<{ spans: Array<Omit<Span, 'service'>> }>;
      }>;
    };
    for (const resourceSpans of request.resourceSpans) {
      const service =
        resourceSpans.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
      for (const scope of resourceSpans.scopeSpans)
        for (const span of scope.spans)
          spans.push({ ...span, service, parentSpanId: span.parentSpanId || undefined });
    }
  }
  return spans;
}

describe('tracing through a real collector', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let collectorDir: string;
  let engine: EngineProcess;
  let judge: FakeJudge;
  let tracing: ProcessTracing | null = null;
  let port: number;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tracing-e2e-'));
    collectorDir = join(dir, 'collector');
    port = await freePort();
    const started = spawnSync('bash', [collectorScript, 'start', collectorDir, String(port)], {
      encoding: 'utf8',
    });
    if (started.status !== 0) throw new Error(`collector: ${started.stderr}${started.stdout}`);
    env = await connectTestEnvironment();
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')), trainer: true });
    judge = await startFakeJudge();
  }, 300_000);

  afterAll(async () => {
    await tracing?.shutdown();
    if (collectorDir) spawnSync('bash', [collectorScript, 'stop', collectorDir]);
    await engine?.stop();
    await judge?.close();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('follows a request from the gateway to scoring and the training run', async () => {
    const taskQueue = uniqueTaskQueue('tracing');
    const loaded = loadConfig(
      {},
      {
        runId: `trace-${taskQueue}`.slice(0, 64),
        method: 'rl',
        dataDir: join(dir, 'data'),
        engine: { url: engine.url },
        teacher: { url: engine.url },
        judge: { baseUrl: judge.url, model: 'fake-judge', votes: 1 },
        training: { batchSize: 1 },
        gateway: { port: 0 },
        temporal: { taskQueue, heartbeatTimeoutMs: 5_000 },
        tracing: { otlpEndpoint: `http://127.0.0.1:${port}` },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    const config = loaded.config;
    tracing = startProcessTracing(config, 'openclaw-e2e');
    expect(tracing).not.toBeNull();
    const client = new Client({
      connection: env.connection,
      namespace: env.namespace ?? 'default',
      plugins: [tracing?.plugin as NonNullable<typeof tracing>['plugin']],
    });
    const store = new FileSampleStore(join(config.dataDir, 'store'));
    // Bundled here, not prebuilt: the bundle holds the tracing plugin's workflow interceptors.
    const worker = await createControlWorker(
      config,
      env.nativeConnection,
      client,
      { store },
      {
        plugins: [tracing?.plugin as NonNullable<typeof tracing>['plugin']],
      },
    );
    const running = worker.run();
    const gateway = await startGateway(config, { temporal: client, logger: false });
    try {
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const session = `trace-${taskQueue}`;
      const chat = async (messages: ChatCompletionMessageParam[], done = false) => {
        const response = await openai.chat.completions.create(
          { model: 'tiny', messages, max_tokens: 6, temperature: 1, seed: messages.length },
          { headers: { 'X-Session-Id': session, ...(done && { 'X-Session-Done': 'true' }) } },
        );
        return response.choices[0]?.message as ChatCompletionMessageParam;
      };
      const m1: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What should I cook tonight?' }];
      const a1 = await chat(m1);
      await chat([...m1, a1, { role: 'user', content: 'thanks, sounds good' }], true);
      await untilTrainingStatus(client, config.runId, (status) => status.policyVersion >= 1, 120_000);
    } finally {
      await gateway.close();
      worker.shutdown();
      await running.catch(() => undefined);
    }
    await tracing?.flush();

    const file = join(collectorDir, 'spans.jsonl');
    let spans: Span[] = [];
    await waitFor(
      async () => {
        spans = spansIn(file);
        return spans.some((s) => s.name === 'RunActivity:trainStep');
      },
      30_000,
      'the trainStep span at the collector',
    );
    if (process.env.DUMP_SPANS)
      console.log(
        spans
          .map((s) => `${s.traceId.slice(0, 8)} ${s.spanId} <- ${s.parentSpanId ?? '-'} ${s.name}`)
          .join('\n'),
      );

    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const requests = spans.filter((s) => s.name === 'POST /v1/chat/completions');
    expect(requests.length).toBeGreaterThanOrEqual(2);
    const first = requests.find((r) =>
      spans.some((s) => s.name === 'SignalWithStartWorkflow:sessionWorkflow' && s.parentSpanId === r.spanId),
    );
    expect(first, 'a request span parents the relay signal-with-start').toBeDefined();
    const trace = spans.filter((s) => s.traceId === first?.traceId);
    // The child of `parent` named `name`, in the request's trace.
    const child = (parent: Span | undefined, name: string) => {
      const found = trace.find((s) => s.name === name && s.parentSpanId === parent?.spanId);
      expect(found, `${name} under ${parent?.name}`).toBeDefined();
      return found;
    };
    const signal = child(first, 'SignalWithStartWorkflow:sessionWorkflow');
    child(signal, 'HandleSignal:turnRecorded');
    const session = child(signal, 'RunWorkflow:sessionWorkflow');
    const scoring = child(
      child(session, 'StartChildWorkflow:scoreTurnWorkflow'),
      'RunWorkflow:scoreTurnWorkflow',
    );
    expect(trace.some((s) => s.name === 'RunActivity:judgeVote')).toBe(true);
    const delivery = child(
      child(scoring, 'StartActivity:deliverToTraining'),
      'RunActivity:deliverToTraining',
    );
    // The sample reaches the training run as a signal in the request's trace; this first sample also started
    // the run, so the run (still open, its own span not yet exported) and its training step share the trace.
    const toTraining = child(delivery, 'SignalWithStartWorkflow:trainingWorkflow');
    child(toTraining, 'HandleSignal:sampleScored');
    const step = trace.find((s) => s.name === 'RunActivity:trainStep');
    expect(step, 'the training step in the request trace').toBeDefined();
    expect(byId.get(step?.parentSpanId ?? '')?.name).toBe('StartActivity:trainStep');
    expect(first?.service).toBe('openclaw-e2e');
  });
});
