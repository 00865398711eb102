#!/usr/bin/env bash
# Builds the project's images with the local Docker engine. Where no registry is reachable, the base is a
# Debian image made here (docker/base-image.sh); set OPENCLAW_BASE_IMAGE to use a public one instead.
set -euo pipefail
cd "$(dirname "$0")/.."

# Trust the same extra CAs as this machine (a TLS-inspecting proxy's), so pip and apt work in builds.
for crt in /usr/local/share/ca-certificates/*.crt; do
  [ -f "$crt" ] && cp "$crt" docker/ca-certificates/
done

BASE="${OPENCLAW_BASE_IMAGE:-}"
if [ -z "$BASE" ]; then
  BASE=$(bash docker/base-image.sh)
fi
echo "== base image: $BASE"
docker build -f engine/Dockerfile --build-arg "BASE_IMAGE=$BASE" -t openclaw/engine:dev .
# The compose local override's Web UI, once its server is built (bash scripts/temporal-ui-server.sh build).
if [ -x build/temporal-ui/2.58.1/bin/ui-server ]; then
  docker build -f docker/temporal-ui.Dockerfile --build-arg "BASE_IMAGE=$BASE" -t openclaw/temporal-ui:local .
fi
