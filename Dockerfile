# mcp-providers, served over streamable HTTP on port 8000 (deploy/compose.yaml; docs/deploy.md).
FROM python:3.11-slim

COPY --from=ghcr.io/astral-sh/uv:0.9 /uv /usr/local/bin/uv
ENV UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 UV_PYTHON_DOWNLOADS=never

WORKDIR /app
# Every dependency at the version deploy/requirements.txt pins, checked against its hashes (--require-hashes): the
# runtime's with the telemetry extra (OTEL_EXPORTER_OTLP_ENDPOINT turns traces on, docs/operations.md;
# it must not make the pod exit for a missing package), exported by
#   uv export --frozen --no-dev --extra telemetry --no-emit-project --format requirements-txt -o deploy/requirements.txt
# and the build backend (deploy/build-requirements.in). tests/test_image.py runs these same steps.
COPY deploy/requirements.txt deploy/build-requirements.txt ./
RUN uv venv /app/.venv && uv pip install --python /app/.venv --require-hashes --no-deps -r requirements.txt -r build-requirements.txt && rm -rf /root/.cache
COPY pyproject.toml README.md ./
COPY core core
COPY plugins plugins
COPY plugin_template plugin_template
# The project itself, on the dependencies above only (--no-deps) and built by the pinned backend.
RUN uv pip install --python /app/.venv --no-deps --no-build-isolation . && rm -rf /root/.cache build

ENV PATH=/app/.venv/bin:$PATH
USER 65534:65534
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
# Not loopback: the Host header must name the service; nginx sends "Host: mcp" (deploy/nginx.conf).
ENTRYPOINT ["mcp-providers", "serve", "--http", "0.0.0.0:8000"]
CMD ["--allow-host", "mcp"]
