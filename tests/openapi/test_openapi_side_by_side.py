"""OpenAPI documents by URL are fetched side by side (round 12, brief U): one after another, N
services whose document URLs never answer held every ``check``, start and reload up for N times
their ``timeout_seconds``. Real loopback servers: one that accepts and is silent, one that serves.

The bound is about concurrency, not speed: one after another, the silent ones take 3 * T."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hosts_support import silent_server

from mcp_providers.plugins.openapi import loading
from mcp_providers.plugins.openapi.settings import OpenAPISettings

TIMEOUT = 1.0
DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "pets", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9"}],
    "paths": {"/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}}},
}


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A document URL on loopback whose server accepts connections and never answers."""
    with silent_server("/openapi.json") as url:
        yield url


@pytest.fixture
def served_url() -> Iterator[str]:
    """A document URL on loopback that answers with :data:`DOCUMENT`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(DOCUMENT).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/openapi.json"
    server.shutdown()
    server.server_close()


def test_silent_document_urls_are_waited_for_side_by_side_each_failing_alone(
    tmp_path: Path, silent_url: str, served_url: str
) -> None:
    path = tmp_path / "pets.json"
    path.write_text(json.dumps(DOCUMENT))
    # six silent documents: one after another they take 6 timeouts; side by side about one (the bound
    # below leaves a loaded machine room: 2.2 timeouts with three was outrun at load 11)
    silent = [{"name": f"silent{n}", "document": silent_url, "timeout_seconds": TIMEOUT} for n in range(6)]
    table = OpenAPISettings.model_validate({"services": [
        *silent, {"name": "by-url", "document": served_url}, {"name": "by-file", "document": str(path)},
    ]})  # fmt: skip
    began = time.monotonic()
    loaded = loading.services(table)
    took = time.monotonic() - began
    assert took < TIMEOUT * 4, f"loading took {took:.1f} s: the documents were fetched one after another"
    by_name = {service.name: (service, operations) for service, operations in loaded}
    assert list(by_name) == [*(f"silent{n}" for n in range(6)), "by-url", "by-file"]  # the configured order
    for n in range(6):
        service, operations = by_name[f"silent{n}"]
        assert service.error is not None and f"service 'silent{n}'" in service.error
        assert "could not be fetched" in service.error and "Timeout" in service.error, service.error
        assert operations == []
    for name in ("by-url", "by-file"):
        service, operations = by_name[name]
        assert service.error is None, service.error
        assert [op.operation_id for op in operations] == ["listPets"]
