# Prometheus from Debian's package on the project's local base image (docker/base-image.sh): no registry
# needed. Compose's `prometheus` service scrapes the gateway and the workers (docker/compose/prometheus.yml).
ARG BASE_IMAGE=openclaw/debian-base:bookworm
FROM ${BASE_IMAGE}

COPY docker/ca-certificates/ /usr/local/share/ca-certificates/extra/
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates prometheus \
 && rm -rf /var/lib/apt/lists/* \
 && update-ca-certificates \
 && mkdir -p /prometheus \
 && chown prometheus:prometheus /prometheus
COPY docker/compose/prometheus.yml /etc/prometheus/prometheus.yml

USER prometheus
VOLUME ["/prometheus"]
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus", "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus", "--web.listen-address=0.0.0.0:9090"]
HEALTHCHECK --interval=5s --timeout=5s --start-period=20s --retries=10 CMD ["/usr/bin/prometheus", "--version"]
