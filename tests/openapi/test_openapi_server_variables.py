"""A document's server URL with server variables (OpenAPI 3.0 §4.7.5-6, 3.1 §4.8.5-6; tester 30
F5): each variable's ``default`` is substituted; a default outside its ``enum``, a variable the URL
uses but does not define, or one without a default is named in the service's error, which said
"names no absolute server URL" although the document names one. Documents are files checked by
the real validator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_providers.errors import UpstreamError
from mcp_providers.plugins.openapi.client import Service
from mcp_providers.plugins.openapi.document import DocumentError, load
from mcp_providers.plugins.openapi.settings import ServiceSettings

pytestmark = pytest.mark.anyio

PATHS = {"/available": {"get": {"operationId": "avail", "responses": {"200": {"description": "ok",
         "content": {"application/json": {}}}}}}}  # fmt: skip


def document(tmp_path: Path, server: dict[str, Any], openapi: str = "3.1.0") -> str:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"openapi": openapi, "info": {"title": "t", "version": "1"}, "servers": [server],
                                "paths": PATHS}))  # fmt: skip
    return str(path)


def service(source: str) -> Service:
    return Service(ServiceSettings(name="svc", document=source), load(source), None)


async def refusal(made: Service) -> str:
    with pytest.raises(UpstreamError) as caught:
        async with made.opened():
            pass
    return str(caught.value)


@pytest.mark.parametrize("openapi", ["3.0.3", "3.1.0"])
@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ({"url": "https://{tenant}.example.net/api", "variables": {"tenant": {"default": "acme"}}},
         "https://acme.example.net/api"),
        ({"url": "https://api.example.net:{port}/{basePath}", "variables": {
            "port": {"enum": ["8443", "443"], "default": "8443"}, "basePath": {"default": "v2/api"}}},
         "https://api.example.net:8443/v2/api"),
        ({"url": "{scheme}://127.0.0.1:9/{v}", "variables": {"scheme": {"enum": ["http", "https"], "default": "http"},
                                                            "v": {"default": "v1"}}},
         "http://127.0.0.1:9/v1"),
    ],
)  # fmt: skip
def test_each_variables_default_is_substituted(tmp_path: Path, openapi: str, server: Any, expected: str) -> None:
    made = service(document(tmp_path, server, openapi))
    assert made.error is None and made.base_url == expected


@pytest.mark.parametrize(
    ("server", "named"),
    [
        ({"url": "https://{tenant}.example.net/api", "variables": {"tenant": {"enum": ["acme", "beta"],
                                                                              "default": "zeta"}}},
         "has server variable 'tenant': its default 'zeta' is not one of its enum ('acme', 'beta')"),
        ({"url": "https://{tenant}.example.net/{region}", "variables": {"tenant": {"default": "acme"}}},
         "uses server variable 'region', which its variables do not define with a default"),
        ({"url": "https://api.example.net/v1}"}, "holds a brace that opens or closes no server variable"),
        ({"url": "https://{tenant}.example.net/api"},
         "uses server variable 'tenant', which its variables do not define with a default"),
    ],
)  # fmt: skip
async def test_a_variable_that_cannot_be_filled_is_named(tmp_path: Path, server: Any, named: str) -> None:
    said = await refusal(service(document(tmp_path, server)))
    assert named in said and "names no absolute server URL" not in said and said.endswith("; set base_url"), said


def test_a_variable_without_a_default_is_named_by_the_validator(tmp_path: Path) -> None:
    source = document(tmp_path, {"url": "https://{tenant}.example.net", "variables": {"tenant": {"enum": ["a"]}}})
    with pytest.raises(DocumentError, match=r"tenant.*default|default.*tenant"):
        load(source)


async def test_base_url_still_wins_over_a_server_url_that_cannot_be_filled(tmp_path: Path) -> None:
    source = document(tmp_path, {"url": "https://{tenant}.example.net/api"})
    made = Service(ServiceSettings(name="svc", document=source, base_url="https://api.example.net"), load(source), None)
    assert made.error is None and made.base_url == "https://api.example.net"


def test_check_reads_the_server_url_through_its_variables(tmp_path: Path) -> None:
    """The tester's path: ``mcp-providers check`` on a service whose document has no base_url."""
    server = {"url": "https://{tenant}.example.net/api", "variables": {"tenant": {"default": "acme"}}}
    source = document(tmp_path, server)
    config = tmp_path / "c.toml"
    config.write_text(f'[[plugins.openapi.services]]\nname = "svc"\ndocument = "{source}"\n')
    run = subprocess.run([sys.executable, "-m", "mcp_providers", "check", "--config", str(config)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "names no absolute server URL" not in run.stdout + run.stderr, run.stdout + run.stderr
