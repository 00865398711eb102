// The option rows of metrics and tracing (see core/config-options.ts).

import type { ConfigOption } from './config-option.js';

export const OBSERVABILITY_OPTIONS = [
  {
    key: 'metrics.port',
    env: 'OPENCLAW_METRICS_PORT',
    kind: 'integer',
    defaultNote: 'control 9464, trainer 9465, env 9466, gpu 9467',
    description:
      "Port of a worker process's Prometheus `/metrics` endpoint (`--metrics-port`); `0` turns it off. The gateway serves its metrics on its own port (docs/observability.md).",
  },
  {
    key: 'metrics.host',
    env: 'OPENCLAW_METRICS_HOST',
    kind: 'string',
    description: "Address a worker process's `/metrics` endpoint listens on.",
  },
  {
    key: 'tracing.otlpEndpoint',
    env: 'OPENCLAW_TRACING_OTLP_ENDPOINT',
    kind: 'string',
    description:
      'OTLP/HTTP base URL spans are sent to (`<url>/v1/traces`), e.g. `http://127.0.0.1:4318`; empty: tracing is off unless `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (docs/observability.md).',
  },
] as const satisfies readonly ConfigOption[];
