#!/bin/sh
# First start: initialise the cluster with the official image's variables; then run the server in the foreground.
set -eu
user="${POSTGRES_USER:-postgres}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >"$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --auth-host=scram-sha-256 --auth-local=trust >/dev/null
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
fi
exec postgres -c listen_addresses='*'
