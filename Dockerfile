# kubedra's image: `kubedra driver` (the chart's DaemonSet) and `kubedra exporter` (its Deployment) both run it.
#   docker build -t kubedra:0.1.0 .
# The builder stage builds kubedra's wheel and the wheels of its dependencies (compiling any that PyPI has no
# wheel for); the final stage installs them from that directory alone (--no-index): no compiler, no build
# front-end, no pip cache in the image.
# The image runs as an unprivileged user (uid 65532), which is all the exporter needs. The driver must run as
# root (the chart sets runAsUser 0 and privileged for it): it writes sockets under /var/lib/kubelet/plugins and
# CDI specs on the host, and opens the /dev/nvidia* nodes through NVML.

FROM python:3.11-slim AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --wheel-dir /wheels .

FROM python:3.11-slim
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels kubedra \
    && groupadd --system --gid 65532 kubedra \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin kubedra
USER 65532:65532
ENTRYPOINT ["kubedra"]
CMD ["--help"]
