# PostgreSQL from Debian's packages, for machines that cannot pull the official postgres image
# (docker-compose.local.yml). It takes the official image's POSTGRES_USER / POSTGRES_PASSWORD variables.
ARG BASE_IMAGE=openclaw/debian-base:bookworm
FROM ${BASE_IMAGE}

COPY docker/ca-certificates/ /usr/local/share/ca-certificates/extra/
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && update-ca-certificates \
 && mkdir -p /var/lib/postgresql/data /run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /run/postgresql
COPY docker/compose/postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh

ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
USER postgres
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
HEALTHCHECK --interval=3s --timeout=5s --start-period=20s --retries=10 CMD pg_isready -h 127.0.0.1 -U "${POSTGRES_USER:-postgres}"
ENTRYPOINT ["sh", "/usr/local/bin/postgres-entrypoint.sh"]
