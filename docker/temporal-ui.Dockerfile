# Temporal's Web UI server for machines that cannot pull temporalio/ui (docker-compose.local.yml). Its binary
# and settings template are the ones `bash scripts/temporal-ui-server.sh build` builds from the Go module proxy
# into build/temporal-ui/<version>/ (run it first). Laid out as the official image is (/home/ui-server, its
# ./start-ui-server.sh), so docker-compose.yml's entrypoint, which reads the codec token first, starts it as is.
ARG BASE_IMAGE=openclaw/debian-base:bookworm
FROM ${BASE_IMAGE}

ARG TEMPORAL_UI_VERSION=2.58.1
COPY docker/ca-certificates/ /usr/local/share/ca-certificates/extra/
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && update-ca-certificates \
 && useradd --system --uid 1002 --create-home --home-dir /home/ui-server ui-server
WORKDIR /home/ui-server
COPY build/temporal-ui/${TEMPORAL_UI_VERSION}/bin/ui-server ./ui-server
COPY build/temporal-ui/${TEMPORAL_UI_VERSION}/config/docker.yaml ./config/docker.yaml
RUN printf '#!/bin/sh\nexec ./ui-server --env docker start\n' > start-ui-server.sh \
 && chmod 755 start-ui-server.sh ui-server \
 && chown -R ui-server /home/ui-server
USER ui-server
ENV TEMPORAL_ADDRESS=temporal:7233 TEMPORAL_UI_PORT=8080
EXPOSE 8080
CMD ["./start-ui-server.sh"]
