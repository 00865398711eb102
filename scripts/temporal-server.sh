#!/usr/bin/env bash
# The Temporal server as production runs it (go.temporal.io/server, its own persistence) on PostgreSQL from
# Debian's packages, for machines without the official images. docs/operations.md, "A real Temporal server".
#
#   bash scripts/temporal-server.sh build            builds the server and its SQL tool from the Go module proxy
#                                                    into build/temporal-server/<version>/ (skipped when there)
#   bash scripts/temporal-server.sh start [DIR]      PostgreSQL (as a non-root user) + schema + server, in the
#                                                    background; DIR defaults to data/temporal-server
#   bash scripts/temporal-server.sh run [DIR]        the same with the server in the foreground (exec), so its
#                                                    pid is this script's (tests, benchmarks, process managers)
#   bash scripts/temporal-server.sh stop [DIR]       stops the server and PostgreSQL of DIR
#   bash scripts/temporal-server.sh schema           only the schema, against POSTGRES_HOST:POSTGRES_PORT
#                                                    (the compose image's entrypoint)
#
# Settings (environment): TEMPORAL_PORT (7233; the server also takes the next 8 ports), TEMPORAL_BIND_IP
# (127.0.0.1; 0.0.0.0 in a container), POSTGRES_PORT (55432), POSTGRES_HOST (127.0.0.1), POSTGRES_EXTERNAL (1:
# use the PostgreSQL at POSTGRES_HOST instead of starting one in DIR), POSTGRES_USER / POSTGRES_PASSWORD
# (temporal / generated once per DIR), TEMPORAL_SHARDS (4: fixed once the schema exists), TEMPORAL_NAMESPACE
# (default), TEMPORAL_LOG_LEVEL
# (warn), TEMPORAL_SERVER_VERSION (1.32.2), GO_TOOLCHAIN (go1.27.3: the server needs Go >= 1.26.10, and Go
# downloads that toolchain from the module proxy), TEMPORAL_CLI (the `temporal` CLI that creates the namespace:
# .venv/bin/temporal by default).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

VERSION="${TEMPORAL_SERVER_VERSION:-1.32.2}"
GO_TOOLCHAIN="${GO_TOOLCHAIN:-go1.27.3}"
CACHE="${TEMPORAL_SERVER_CACHE:-$ROOT/build/temporal-server/$VERSION}"
SERVER_BIN="$CACHE/bin/temporal-server"
SQL_BIN="$CACHE/bin/temporal-sql-tool"
SCHEMA_DIR="$CACHE/schema/postgresql/v12"
PORT="${TEMPORAL_PORT:-7233}"
PG_PORT="${POSTGRES_PORT:-55432}"
PG_HOST="${POSTGRES_HOST:-127.0.0.1}"
PG_USER="${POSTGRES_USER:-temporal}"
SHARDS="${TEMPORAL_SHARDS:-4}"
NAMESPACE="${TEMPORAL_NAMESPACE:-default}"
LOG_LEVEL="${TEMPORAL_LOG_LEVEL:-warn}"
BIND_IP="${TEMPORAL_BIND_IP:-127.0.0.1}"
EXTERNAL_PG="${POSTGRES_EXTERNAL:-0}"
# Where the server's services find each other: the bind address, or this host's own address for 0.0.0.0.
BROADCAST="$BIND_IP"
if [ "$BIND_IP" = "0.0.0.0" ]; then
  BROADCAST="$( (hostname -i 2>/dev/null || getent hosts "$(hostname)") | awk '{print $1; exit}')"
fi

log() { echo "== $*" >&2; }
die() { echo "temporal-server.sh: $*" >&2; exit 1; }

build() {
  if [ -x "$SERVER_BIN" ] && [ -x "$SQL_BIN" ] && [ -d "$SCHEMA_DIR/temporal/versioned" ]; then
    log "Temporal server $VERSION already built in $CACHE"
    return
  fi
  command -v go >/dev/null 2>&1 || die "building the server needs Go (>= 1.21, which fetches $GO_TOOLCHAIN itself): apt-get install golang-go, or see https://go.dev/dl"
  log "building go.temporal.io/server v$VERSION (cmd/server, cmd/tools/sql) with $GO_TOOLCHAIN: a few minutes"
  local out
  out="$(mktemp -d)"
  GOTOOLCHAIN="$GO_TOOLCHAIN" GOBIN="$out" GOFLAGS=-modcacherw go install \
    "go.temporal.io/server/cmd/server@v$VERSION" "go.temporal.io/server/cmd/tools/sql@v$VERSION"
  local module
  module="$(GOTOOLCHAIN="$GO_TOOLCHAIN" go env GOMODCACHE)/go.temporal.io/server@v$VERSION"
  [ -d "$module/schema/postgresql/v12" ] || die "the module's schemas are not at $module/schema/postgresql/v12"
  mkdir -p "$CACHE/bin" "$CACHE/schema/postgresql"
  rm -rf "$SCHEMA_DIR"
  cp -R "$module/schema/postgresql/v12" "$SCHEMA_DIR"
  chmod -R u+w "$CACHE/schema"
  mv "$out/server" "$SERVER_BIN"
  mv "$out/sql" "$SQL_BIN"
  rmdir "$out"
  log "built $("$SERVER_BIN" --version) into $CACHE"
}

pg_bindir() {
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/pg_ctl" ]; then
    pg_config --bindir
    return
  fi
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/pg_ctl" ]; then echo "$dir"; return; fi
  done
  die "PostgreSQL is not installed: apt-get install postgresql (Debian's package)"
}

# PostgreSQL refuses to run as root: as root, its commands run as Debian's `postgres` user.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    getent passwd postgres >/dev/null || die "running as root needs the postgres user that Debian's postgresql package creates"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pg_password() {
  local dir="$1"
  if [ -n "${POSTGRES_PASSWORD:-}" ]; then echo "$POSTGRES_PASSWORD"; return; fi
  if [ ! -s "$dir/postgres-password" ]; then
    (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$dir/postgres-password")
  fi
  cat "$dir/postgres-password"
}

postgres_start() {
  local dir="$1" bindir pgdata password
  bindir="$(pg_bindir)"
  pgdata="$dir/postgres"
  password="$(pg_password "$dir")"
  mkdir -p "$pgdata"
  chmod 700 "$pgdata"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$pgdata"
    as_pg test -x "$dir" || die "the postgres user cannot enter $dir: give its folders o+x (chmod o+x)"
  fi
  if [ ! -s "$pgdata/PG_VERSION" ]; then
    log "initialising PostgreSQL in $pgdata"
    local pwfile
    pwfile="$(mktemp)"
    printf '%s\n' "$password" >"$pwfile"
    [ "$(id -u)" -eq 0 ] && chown postgres "$pwfile"
    as_pg "$bindir/initdb" -D "$pgdata" --username="$PG_USER" --pwfile="$pwfile" \
      --auth-host=scram-sha-256 --auth-local=scram-sha-256 >/dev/null
    rm -f "$pwfile"
  fi
  if as_pg "$bindir/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
    log "PostgreSQL already runs in $pgdata"
    return
  fi
  log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
  as_pg "$bindir/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories='' -c max_connections=100" \
    start >/dev/null || { tail -20 "$pgdata/server.log" >&2; die "PostgreSQL did not start"; }
}

postgres_stop() {
  local dir="$1" bindir
  [ -s "$dir/postgres/PG_VERSION" ] || return 0
  bindir="$(pg_bindir)"
  if as_pg "$bindir/pg_ctl" -D "$dir/postgres" status >/dev/null 2>&1; then
    as_pg "$bindir/pg_ctl" -D "$dir/postgres" -m fast -w stop >/dev/null
  fi
}

# An external PostgreSQL (compose's service) may still be starting: wait until it takes TCP connections.
wait_for_postgres() {
  local i
  for i in $(seq 1 120); do
    if (exec 3<>"/dev/tcp/$PG_HOST/$PG_PORT") 2>/dev/null; then return; fi
    sleep 1
  done
  die "PostgreSQL at $PG_HOST:$PG_PORT did not answer within 120 s"
}

# Creates both databases and brings their schemas to the version this server needs, with its own SQL tool:
# on a new database `setup-schema -v 0.0` then every versioned step; later only the steps still missing.
schema() {
  local password="$1" db versioned
  [ -x "$SQL_BIN" ] || die "no SQL tool at $SQL_BIN: run \`bash scripts/temporal-server.sh build\`"
  export SQL_PLUGIN=postgres12 SQL_HOST="$PG_HOST" SQL_PORT="$PG_PORT" SQL_USER="$PG_USER" SQL_PASSWORD="$password"
  local out
  out="$(mktemp)"
  for db in temporal temporal_visibility; do
    versioned="$SCHEMA_DIR/temporal/versioned"
    [ "$db" = temporal_visibility ] && versioned="$SCHEMA_DIR/visibility/versioned"
    # create-database fails when it exists (a second run); update-schema fails on a database never set up.
    "$SQL_BIN" --db "$db" create-database --defaultdb postgres >"$out" 2>&1 || true
    if ! "$SQL_BIN" --db "$db" update-schema -d "$versioned" >"$out" 2>&1; then
      if ! { "$SQL_BIN" --db "$db" setup-schema -v 0.0 && "$SQL_BIN" --db "$db" update-schema -d "$versioned"; } >"$out" 2>&1; then
        tail -20 "$out" >&2
        rm -f "$out"
        die "setting up the schema of $db on $PG_HOST:$PG_PORT failed"
      fi
    fi
  done
  rm -f "$out"
  log "schemas of temporal and temporal_visibility up to date ($("$SQL_BIN" --version 2>/dev/null | awk '{print $NF}'))"
}

write_config() {
  local dir="$1" password="$2" file="$1/temporal.yaml"
  local membership=$((PORT + 5))
  (umask 077 && cat >"$file" <<EOF
# Written by scripts/temporal-server.sh; rewritten on every start.
log:
  stdout: true
  level: $LOG_LEVEL
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: $SHARDS
  datastores:
    default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "$PG_HOST:$PG_PORT"
        connectProtocol: tcp
        user: "$PG_USER"
        password: "$password"
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    visibility:
      sql:
        pluginName: postgres12
        databaseName: temporal_visibility
        connectAddr: "$PG_HOST:$PG_PORT"
        connectProtocol: tcp
        user: "$PG_USER"
        password: "$password"
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "$BROADCAST"
services:
  frontend:
    rpc: { grpcPort: $PORT, httpPort: $((PORT + 1)), membershipPort: $membership, bindOnIP: "$BIND_IP" }
  history:
    rpc: { grpcPort: $((PORT + 2)), membershipPort: $((membership + 1)), bindOnIP: "$BIND_IP" }
  matching:
    rpc: { grpcPort: $((PORT + 3)), membershipPort: $((membership + 2)), bindOnIP: "$BIND_IP" }
  worker:
    rpc: { grpcPort: $((PORT + 4)), membershipPort: $((membership + 3)), bindOnIP: "$BIND_IP" }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "$BROADCAST:$PORT"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: "$dir/dynamicconfig.yaml"
  pollInterval: 60s
EOF
  )
  if [ ! -f "$dir/dynamicconfig.yaml" ]; then
    cat >"$dir/dynamicconfig.yaml" <<'EOF'
# Dynamic config of this server (docs.temporal.io/references/dynamic-configuration); read every 60 s.
limit.maxIDLength:
  - value: 255
    constraints: {}
EOF
  fi
}

temporal_cli() {
  if [ -n "${TEMPORAL_CLI:-}" ]; then echo "$TEMPORAL_CLI"; return; fi
  if [ -x "$ROOT/.venv/bin/temporal" ]; then echo "$ROOT/.venv/bin/temporal"; return; fi
  command -v temporal || die "no temporal CLI to create the namespace: run \`npm run setup\` or set TEMPORAL_CLI"
}

# Waits until the frontend answers, then registers the namespace (once: a second run finds it).
namespace() {
  local cli address="127.0.0.1:$PORT" i
  cli="$(temporal_cli)"
  for i in $(seq 1 240); do
    if "$cli" operator cluster health --address "$address" >/dev/null 2>&1; then break; fi
    [ "$i" -eq 240 ] && die "the server did not answer at $address within 120 s"
    sleep 0.5
  done
  if ! "$cli" operator namespace describe --namespace "$NAMESPACE" --address "$address" >/dev/null 2>&1; then
    "$cli" operator namespace create --namespace "$NAMESPACE" --retention 72h --address "$address" >/dev/null
    log "namespace $NAMESPACE created"
  fi
  # A new namespace takes a moment to reach every service: wait until a list call on it works.
  for i in $(seq 1 120); do
    if "$cli" workflow list --namespace "$NAMESPACE" --address "$address" --limit 1 >/dev/null 2>&1; then return; fi
    sleep 0.5
  done
  die "namespace $NAMESPACE is not usable yet at $address"
}

prepare() {
  local dir="$1" password
  build
  mkdir -p "$dir"
  if [ "$EXTERNAL_PG" = "1" ]; then
    [ -n "${POSTGRES_PASSWORD:-}" ] || die "POSTGRES_EXTERNAL=1 needs POSTGRES_PASSWORD"
    wait_for_postgres
  else
    postgres_start "$dir"
  fi
  password="$(pg_password "$dir")"
  schema "$password"
  write_config "$dir" "$password"
}

command="${1:-}"
dir="$(realpath -m "${2:-$ROOT/data/temporal-server}")"
case "$command" in
  build) build ;;
  schema)
    [ -n "${POSTGRES_PASSWORD:-}" ] || die "schema needs POSTGRES_PASSWORD"
    schema "$POSTGRES_PASSWORD"
    ;;
  start)
    prepare "$dir"
    if [ -s "$dir/temporal.pid" ] && kill -0 "$(cat "$dir/temporal.pid")" 2>/dev/null; then
      log "the server already runs (pid $(cat "$dir/temporal.pid"))"
    else
      log "starting the Temporal server on 127.0.0.1:$PORT (log: $dir/temporal.log)"
      nohup "$SERVER_BIN" --config-file "$dir/temporal.yaml" --allow-no-auth start >"$dir/temporal.log" 2>&1 &
      echo $! >"$dir/temporal.pid"
    fi
    namespace
    echo "127.0.0.1:$PORT"
    ;;
  run)
    prepare "$dir"
    # The namespace is registered beside the server, once it answers.
    namespace >/dev/null 2>"$dir/namespace.log" &
    echo $$ >"$dir/temporal.pid"
    exec "$SERVER_BIN" --config-file "$dir/temporal.yaml" --allow-no-auth start
    ;;
  stop)
    if [ -s "$dir/temporal.pid" ]; then
      pid="$(cat "$dir/temporal.pid")"
      if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true
      fi
      rm -f "$dir/temporal.pid"
    fi
    postgres_stop "$dir"
    log "stopped the server and PostgreSQL of $dir"
    ;;
  *)
    sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
