#!/usr/bin/env bash
# Makes this machine's Docker engine usable for the sandboxes and compose: installs docker.io, debootstrap and
# docker-compose when they are missing (Debian/Ubuntu, as root), starts dockerd when nothing answers, and waits
# until `docker info` works. Safe to run again: each step is skipped when already done.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
# Compose: the v2 plugin where the machine has it, else Debian's docker-compose 1.29 (the compose file keeps to
# syntax both accept).
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1; then
  missing+=(docker-compose)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== installing ${missing[*]}"
  as_root apt-get update -qq
  # Only the packages named: the engine, its runtime (runc, containerd, tini come as dependencies).
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
    $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "== starting dockerd"
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    as_root systemctl start docker
  else
    # No init system (a container or a bare CI machine): run it in the background, logging to a file.
    as_root sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'
  fi
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi
docker info >/dev/null 2>&1 || { echo "docker engine did not come up; see /var/log/dockerd.log" >&2; exit 1; }
echo "== docker engine $(docker version --format '{{.Server.Version}}')"
