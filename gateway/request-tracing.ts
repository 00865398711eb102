// The gateway's HTTP request span: the root of a turn's trace. It is the active context while the route runs,
// so the outbox entry a main turn writes carries it (store/outbox.ts) and the relay's signal-with-start of the
// session workflow becomes its child, however late the relay delivers. A no-op tracer when tracing is off.

import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';

const tracer = trace.getTracer('openclaw-gateway');

export function traceRequests(app: FastifyInstance): void {
  const spans = new WeakMap<object, ReturnType<typeof tracer.startSpan>>();
  // A callback hook, first of all hooks: the rest of the request runs inside `context.with`.
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const span = tracer.startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': request.method,
        'http.route': route,
        'url.path': request.url.split('?')[0],
      },
    });
    spans.set(request, span);
    context.with(trace.setSpan(context.active(), span), done);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const span = spans.get(request);
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}
