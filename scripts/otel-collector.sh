#!/usr/bin/env bash
# The OpenTelemetry Collector (core components: OTLP receiver, debug and file exporters) built from
# scripts/otel-collector/ through the Go module proxy, cached in build/otelcol/.
#   scripts/otel-collector.sh build                 build once (GOTOOLCHAIN=go1.27.3; minutes the first time)
#   scripts/otel-collector.sh start <dir> <port>    OTLP/HTTP on 127.0.0.1:<port>, spans as JSON lines in <dir>/spans.jsonl
#   scripts/otel-collector.sh stop <dir>            stops the collector started with <dir>
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/otelcol/otelcol-openclaw"
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"

build() {
  if [[ -x "$bin" && "$bin" -nt "$root/scripts/otel-collector/go.sum" && "$bin" -nt "$root/scripts/otel-collector/main.go" ]]; then
    return 0
  fi
  mkdir -p "$(dirname "$bin")"
  (cd "$root/scripts/otel-collector" && go build -trimpath -o "$bin" .)
}

case "${1:-}" in
  build)
    build
    echo "$bin"
    ;;
  start)
    dir="${2:?usage: start <dir> <port>}"
    port="${3:?usage: start <dir> <port>}"
    build
    mkdir -p "$dir"
    cat >"$dir/config.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$port
exporters:
  file:
    path: $dir/spans.jsonl
    flush_interval: 100ms
  debug:
    verbosity: basic
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file, debug]
YAML
    "$bin" --config "$dir/config.yaml" >"$dir/collector.log" 2>&1 &
    echo $! >"$dir/collector.pid"
    for _ in $(seq 1 100); do
      if grep -q "Everything is ready" "$dir/collector.log" 2>/dev/null; then
        echo "collector on http://127.0.0.1:$port (pid $(cat "$dir/collector.pid"))"
        exit 0
      fi
      if ! kill -0 "$(cat "$dir/collector.pid")" 2>/dev/null; then
        cat "$dir/collector.log" >&2
        exit 1
      fi
      sleep 0.1
    done
    echo "the collector did not become ready; see $dir/collector.log" >&2
    exit 1
    ;;
  stop)
    dir="${2:?usage: stop <dir>}"
    if [[ -f "$dir/collector.pid" ]]; then
      kill "$(cat "$dir/collector.pid")" 2>/dev/null || true
      rm -f "$dir/collector.pid"
    fi
    ;;
  *)
    sed -n '2,6p' "$0" >&2
    exit 2
    ;;
esac
