# Image for the example tool microservices (tool_clients) and the argentic-tools CLI.
# docker-compose.yml builds it once per tool service (cached after the first) and
# gives each service its own command, so the image has no default one:
#
#   docker build -t argentic-tools .
#   docker run --rm argentic-tools python -m tool_clients.calculator --broker mqtt://HOST:1883
FROM python:3.11-slim

# Unbuffered output so `docker compose logs` shows log lines as they happen; no
# bytecode or pip cache, which would only grow the image.
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# Only what the package build needs, so edits elsewhere (tests, docs) keep the
# install layer cached.
COPY pyproject.toml README.md ./
COPY argentic_tools ./argentic_tools
COPY tool_clients ./tool_clients
RUN pip install '.[cli]' && rm -rf /src

# Tools run unprivileged. /data is the files tool's sandbox; a named volume mounted
# there starts out owned by this user.
RUN useradd --create-home --uid 10001 tools && mkdir /data && chown tools:tools /data
USER tools
WORKDIR /home/tools
