#!/usr/bin/env bash
# Makes a Debian bookworm base image locally (debootstrap + docker import) for machines that reach
# Debian's package mirror but no container registry. Prints the image name. Idempotent.
set -euo pipefail
IMAGE="${OPENCLAW_BASE_IMAGE:-openclaw/debian-base:bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "$IMAGE"
  exit 0
fi
command -v debootstrap >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
ROOTFS=$(mktemp -d)
trap 'rm -rf "$ROOTFS"' EXIT
debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >&2
# Same sources the running machine uses, so apt-get inside containers reaches the same mirror.
echo "deb $MIRROR bookworm main" > "$ROOTFS/etc/apt/sources.list"
tar -C "$ROOTFS" -c . | docker import - "$IMAGE" >&2
echo "$IMAGE"
