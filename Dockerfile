# mcp-providers, served over streamable HTTP on port 8000 (deploy/compose.yaml; docs/deploy.md).
FROM python:3.11-slim

COPY --from=ghcr.io/astral-sh/uv:0.9 /uv /usr/local/bin/uv
ENV UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 UV_PYTHON_DOWNLOADS=never

WORKDIR /app
COPY pyproject.toml uv.lock README.md ./
COPY core core
COPY plugins plugins
COPY plugin_template plugin_template
# --locked: the versions uv.lock pins, or the build fails (never a newer release picked up); the
# telemetry extra: OTEL_EXPORTER_OTLP_ENDPOINT turns traces on (docs/operations.md), it must not
# make the pod exit for a missing package.
RUN uv sync --locked --no-dev --no-editable --extra telemetry && rm -rf /root/.cache

ENV PATH=/app/.venv/bin:$PATH
USER 65534:65534
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
# Not loopback: the Host header must name the service; nginx sends "Host: mcp" (deploy/nginx.conf).
ENTRYPOINT ["mcp-providers", "serve", "--http", "0.0.0.0:8000"]
CMD ["--allow-host", "mcp"]
