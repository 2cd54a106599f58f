# pykueue: one image for manager, webhook, extender and visibility API.
# Stage 1 builds pykueue's own wheel from the package alone (no tests or benchmarks; the
# wheel leaves the dev cluster out, by pyproject.toml's exclude). Stage 2 installs the
# dependencies from requirements.lock, every file checked against its hash, then that wheel
# without dependencies, into a slim runtime that runs as a non-root user on a read-only root
# filesystem (no bytecode is written at run time; certificates and temp files go to emptyDirs).
# Health is checked by Kubernetes probes (/healthz, /readyz), not by the image.
# Both stages start from the same base, pinned by digest (a tag moves); to move to a newer
# base: `docker buildx imagetools inspect python:3.11-slim-bookworm` and replace the digest.
ARG BASE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b

FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY pykueue ./pykueue
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM ${BASE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements.lock /tmp/requirements.lock
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --require-hashes --only-binary=:all: -r /tmp/requirements.lock \
    && pip install --no-cache-dir --no-deps --no-index --find-links=/wheels "pykueue==0.1.0" \
    && rm -rf /wheels /tmp/requirements.lock \
    && python -m compileall -q /usr/local/lib/python3.11/site-packages
COPY manifests/crds /etc/pykueue/crds
USER 65532:65532
EXPOSE 9443 8443 8082 8090 8081
ENTRYPOINT ["pykueue"]
CMD ["run", "--config=/etc/pykueue/controller_manager_config.yaml"]
