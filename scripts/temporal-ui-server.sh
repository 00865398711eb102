#!/usr/bin/env bash
# Temporal's Web UI server (github.com/temporalio/ui-server/v2), built from the Go module proxy, for machines
# that cannot pull the temporalio/ui image (docker-compose.local.yml runs it; docs/temporal-ui.md).
#
#   bash scripts/temporal-ui-server.sh build   builds it into build/temporal-ui/<version>/ (skipped when there):
#                                              bin/ui-server and config/docker.yaml (its settings, read from
#                                              TEMPORAL_* variables when it starts)
#   bash scripts/temporal-ui-server.sh run     the UI in the foreground (exec): TEMPORAL_ADDRESS (127.0.0.1:7233),
#                                              TEMPORAL_UI_PORT (8080), TEMPORAL_CODEC_ENDPOINT, TEMPORAL_CORS_ORIGINS
#
# Settings: TEMPORAL_UI_VERSION (2.58.1: the version scripts/temporal-ui/go.mod pins), GO_TOOLCHAIN (go1.27.3:
# the UI server needs Go >= 1.26.10, and Go downloads that toolchain from the module proxy).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

VERSION="${TEMPORAL_UI_VERSION:-2.58.1}"
GO_TOOLCHAIN="${GO_TOOLCHAIN:-go1.27.3}"
CACHE="${TEMPORAL_UI_CACHE:-$ROOT/build/temporal-ui/$VERSION}"
UI_BIN="$CACHE/bin/ui-server"
MODULE_DIR="$ROOT/scripts/temporal-ui"

log() { echo "== $*" >&2; }
die() { echo "temporal-ui-server.sh: $*" >&2; exit 1; }

build() {
  if [ -x "$UI_BIN" ] && [ -f "$CACHE/config/docker.yaml" ]; then
    log "Temporal UI server $VERSION already built in $CACHE"
    return
  fi
  command -v go >/dev/null 2>&1 || die "building the UI server needs Go (>= 1.21, which fetches $GO_TOOLCHAIN itself): apt-get install golang-go"
  grep -q "github.com/temporalio/ui-server/v2 v$VERSION\$" "$MODULE_DIR/go.mod" \
    || die "scripts/temporal-ui/go.mod does not pin ui-server v$VERSION"
  log "building github.com/temporalio/ui-server/v2 v$VERSION (cmd/server) with $GO_TOOLCHAIN: a few minutes"
  mkdir -p "$CACHE/bin" "$CACHE/config"
  (cd "$MODULE_DIR" && GOTOOLCHAIN="$GO_TOOLCHAIN" GOFLAGS=-modcacherw \
    go build -trimpath -o "$UI_BIN.tmp" github.com/temporalio/ui-server/v2/cmd/server)
  local module
  module="$(cd "$MODULE_DIR" && GOTOOLCHAIN="$GO_TOOLCHAIN" go list -m -f '{{.Dir}}' github.com/temporalio/ui-server/v2)"
  # The settings the official image starts with: a template of TEMPORAL_* variables the server fills itself.
  cp "$module/config/docker.yaml" "$CACHE/config/docker.yaml"
  chmod u+w "$CACHE/config/docker.yaml"
  mv "$UI_BIN.tmp" "$UI_BIN"
  log "built the Temporal UI server $("$UI_BIN" --version 2>/dev/null | awk '{print $NF}') into $CACHE"
}

run() {
  [ -x "$UI_BIN" ] || build
  cd "$CACHE"
  exec "$UI_BIN" --root "$CACHE" --config config --env docker start
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) die "usage: $0 build|run" ;;
esac
