# vLLM's OpenAI server for compose's vllm profile, built from the same base as the engine image (a public
# python:3.11 image, or the Debian base docker/base-image.sh makes). vLLM is installed by the same script as
# on a developer machine (scripts/vllm-setup.sh: the CPU build without a GPU), with the engine package beside
# it (--no-deps) for `make-tiny-model`. The model is MODEL_DIR at /models/policy, else the tiny model.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PATH=/opt/vllm/venv/bin:$PATH \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt

COPY docker/ca-certificates/ /usr/local/share/ca-certificates/extra/
# vLLM's CPU build links libnuma (and its CPU attention uses it for memory placement); its sampler is compiled
# by torch's inductor on the first request, which needs a C++ compiler and Python's headers.
RUN apt-get update && apt-get install -y --no-install-recommends libnuma1 ca-certificates g++ python3-dev \
 && if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then \
      apt-get install -y --no-install-recommends python3 python3-venv python3-pip; \
    fi \
 && rm -rf /var/lib/apt/lists/* \
 && update-ca-certificates \
 && useradd --system --create-home --home-dir /home/vllm vllm

WORKDIR /opt/vllm
COPY scripts/vllm-setup.sh scripts/vllm-setup.sh
RUN VLLM_VENV=/opt/vllm/venv PYTHON=python3 bash scripts/vllm-setup.sh
COPY engine /opt/vllm/engine-src
RUN pip install --no-deps /opt/vllm/engine-src

USER vllm
EXPOSE 30000
ENV OPENCLAW_MODEL_DIR=/models/policy OPENCLAW_TINY_MODEL_DIR=/home/vllm/tiny-model
# The engine token (OPENCLAW_ENGINE_TOKEN_FILE, when set) becomes vLLM's own VLLM_API_KEY: out of the process list.
ENTRYPOINT ["sh", "-c", "if [ -n \"$OPENCLAW_ENGINE_TOKEN_FILE\" ]; then VLLM_API_KEY=\"$(head -n 1 \"$OPENCLAW_ENGINE_TOKEN_FILE\")\" || exit 1; export VLLM_API_KEY; fi; model=\"$OPENCLAW_MODEL_DIR\"; if [ ! -f \"$model/config.json\" ]; then model=\"$OPENCLAW_TINY_MODEL_DIR\"; [ -f \"$model/config.json\" ] || python -m openclaw_engine make-tiny-model \"$model\" --head-dim 64; fi; exec python -m vllm.entrypoints.openai.api_server --model \"$model\" \"$@\"", "vllm"]
