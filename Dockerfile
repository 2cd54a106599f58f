# pykueue: one image for manager, webhook, extender and visibility API.
# Stage 1 builds wheels for pykueue and its dependencies; stage 2 installs only those
# wheels into a slim runtime that runs as a non-root user on a read-only root filesystem
# (no bytecode is written at run time; certificates and temp files go to emptyDirs).
# Health is checked by Kubernetes probes (/healthz, /readyz), not by the image.

FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY pykueue ./pykueue
COPY api ./api
COPY kube ./kube
COPY manager ./manager
COPY webhook ./webhook
COPY extender ./extender
COPY certs ./certs
COPY devcluster ./devcluster
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels "pykueue==0.1.0" \
    && rm -rf /wheels \
    && python -m compileall -q /usr/local/lib/python3.11/site-packages
COPY manifests/crds /etc/pykueue/crds
USER 65532:65532
EXPOSE 9443 8443 8082 8090 8081
ENTRYPOINT ["pykueue"]
CMD ["run", "--config=/etc/pykueue/controller_manager_config.yaml"]
