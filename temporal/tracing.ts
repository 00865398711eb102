// OpenTelemetry tracing of one process: spans go to an OTLP/HTTP collector (`tracing.otlpEndpoint`, else the
// standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and Temporal's OpenTelemetry
// plugin carries the trace context in workflow and activity headers, so a gateway request, the session
// workflow it signals, scoring and the training step share one trace. Off, and free, when nothing is set.

import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import type { OpenClawConfig } from '../core/config.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface ProcessTracing {
  /** For Worker.create and Client (`plugins`): Temporal's interceptors and the workflow span sink. */
  plugin: OpenTelemetryPlugin;
  /** Sends what is still buffered. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

let active: ProcessTracing | null = null;

/** The tracing this process started, if any (clients made after it carry the trace context). */
export function processTracing(): ProcessTracing | null {
  return active;
}

/** Where spans go: the config's endpoint, else the standard variables' (read by the exporter), else off. */
export function tracingEndpoint(config: OpenClawConfig, env: Env = process.env): string | null {
  if (config.tracing.otlpEndpoint) return `${config.tracing.otlpEndpoint.replace(/\/+$/, '')}/v1/traces`;
  return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT ? '' : null;
}

/**
 * Starts tracing for this process under `serviceName` (OTEL_SERVICE_NAME wins), once: a second call returns
 * the first's. Null when no endpoint is configured.
 */
export function startProcessTracing(
  config: OpenClawConfig,
  serviceName: string,
  env: Env = process.env,
): ProcessTracing | null {
  if (active) return active;
  const url = tracingEndpoint(config, env);
  if (url === null) return null;
  const resource = new Resource({ 'service.name': env.OTEL_SERVICE_NAME || serviceName });
  // An empty url lets the exporter read the OTEL_EXPORTER_OTLP_* variables itself.
  const exporter = new OTLPTraceExporter(url ? { url } : {});
  const spanProcessor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 500 });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Registers the AsyncLocalStorage context manager and the W3C trace-context propagator as globals.
  provider.register();
  const started: ProcessTracing = {
    plugin: new OpenTelemetryPlugin({ resource, spanProcessor }),
    flush: () => provider.forceFlush(),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      if (active === started) active = null;
    },
  };
  active = started;
  return started;
}
