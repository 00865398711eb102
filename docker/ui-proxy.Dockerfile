# Stands in for temporalio/ui on machines that cannot pull it (docker-compose.local.yml): the dev server
# serves the same Web UI on its port 8233, and this forwards the UI's usual port 8080 to it.
ARG BASE_IMAGE=openclaw/debian-base:bookworm
FROM ${BASE_IMAGE}
COPY docker/ca-certificates/ /usr/local/share/ca-certificates/extra/
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update \
 && apt-get install -y --no-install-recommends socat \
 && rm -rf /var/lib/apt/lists/*
ENV UI_UPSTREAM=temporal:8233
EXPOSE 8080
USER nobody
CMD ["sh", "-c", "exec socat TCP-LISTEN:8080,fork,reuseaddr TCP:${UI_UPSTREAM}"]
