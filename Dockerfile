# syntax=docker/dockerfile:1
#
# One image for the coordinator, the workers and the CLI: the command picks the role
# (`coordinator`, `worker`, `submit`, `produce`, `consume`, ...).
#
#   docker build -t cerfleet .                   # slim runtime (the default: last stage)
#   docker build -t cerfleet:spark --target spark .   # adds a JRE and the [spark] extra
#
# Bookworm rather than the floating `slim` tag: the Spark target needs
# openjdk-17-jre-headless, which newer Debian releases no longer ship.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------------------
# Wheels of cerfleet and of every dependency, so no runtime stage needs a compiler or
# network access to PyPI beyond this stage.
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY coordinator ./coordinator
COPY workers ./workers
RUN pip wheel --wheel-dir /wheels .

# pyspark is a large source distribution: built only when the Spark target is asked for
# (BuildKit skips stages the chosen target does not depend on).
FROM builder AS spark-builder
RUN pip wheel --wheel-dir /wheels '.[spark]'

# ---------------------------------------------------------------------------------------
# What both runtime targets share: the unprivileged user and the examples.
FROM ${PYTHON_IMAGE} AS base
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# A fixed numeric uid/gid so Kubernetes can verify runAsNonRoot and volume ownership
# (fsGroup) without resolving names inside the image.
RUN groupadd --system --gid 10001 cerfleet \
    && useradd --system --uid 10001 --gid 10001 --home-dir /app --no-create-home \
       --shell /usr/sbin/nologin cerfleet
WORKDIR /app
# The compose `setup` service registers and replays these (owned by root: read-only to
# the user the image runs as); `cerfleet dev --example` reads the package's own copies.
COPY examples ./examples
# /metrics and /healthz when started with --metrics-port 9464 (or CERFLEET_METRICS_PORT).
EXPOSE 9464

# ---------------------------------------------------------------------------------------
# `cerfleet compact` / `cerfleet backfill`: Spark in local mode or as a driver.
FROM base AS spark
# The man directory is missing in slim images and the JRE's post-install script needs it.
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
RUN --mount=type=bind,from=spark-builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels 'cerfleet[spark]'
USER 10001:10001
ENTRYPOINT ["cerfleet"]
CMD ["--help"]

# ---------------------------------------------------------------------------------------
# The default target (last stage): Python and the wheels only.
FROM base AS runtime
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels cerfleet
USER 10001:10001
ENTRYPOINT ["cerfleet"]
CMD ["--help"]
