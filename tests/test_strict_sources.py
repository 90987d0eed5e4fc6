"""A configured source that serves nothing (an upstream MCP server that cannot be started or
listed, or lists nothing served here; an OpenAPI document that cannot be read, or whose every
operation is left out; a provider whose ``lifespan`` fails to start) fails ``check`` and makes
``serve --strict`` refuse, naming the source and the fix; plain ``serve`` warns and serves the rest.
``check`` prints one line per problem, the tracebacks only with ``--verbose``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import prefork
import pytest
from cli_support import SERVED, no_serving, run_cli
from serve_support import free_port

TINY = str(Path(__file__).with_name("tiny_stdio_upstream.py"))
ENV = {"COLUMNS": "400", "MCP_PROVIDERS_PLUGINS": None}


def _upstream(name: str, *args: str, command: str | None = None) -> str:
    """A server running the tiny upstream (through the fork server), or ``command`` with ``args``."""
    server: dict[str, Any] = {"command": command, "args": list(args), "env": {}}
    if command is None:
        server = prefork.upstream_script(TINY, name, *args)
    env = ", ".join(f"{key} = {json.dumps(value)}" for key, value in server["env"].items())
    return (
        f'[[plugins.upstream.servers]]\nname = "{name}"\ncommand = {json.dumps(server["command"])}\n'
        f"args = {json.dumps(server['args'])}\nenv = {{ {env} }}\n"
        f'prefixes = ["{name}://"]\ntool_prefix = "{name}_"\n\n'
    )


def _document(folder: Path, *, server: bool = True) -> Path:
    """A valid OpenAPI 3.0 document with one GET operation, ``listItems`` (and a server URL)."""
    document = {
        "openapi": "3.0.3",
        "info": {"title": "items", "version": "1"},
        "paths": {
            "/items": {
                "get": {
                    "operationId": "listItems",
                    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {}}}}},
                }
            }
        },
    }
    if server:
        document["servers"] = [{"url": "http://127.0.0.1:9/v1"}]
    path = folder / f"items-{server}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _service(name: str, document: Path | str, extra: str = "") -> str:
    return f'[[plugins.openapi.services]]\nname = "{name}"\ndocument = {json.dumps(str(document))}\n{extra}\n\n'


def _config(folder: Path, *tables: str) -> str:
    path = folder / "mcp-providers.toml"
    path.write_text('allow = ["upstream", "openapi"]\n\n' + "".join(tables), encoding="utf-8")
    return str(path)


@pytest.fixture
def broken(tmp_path: Path) -> str:
    """One upstream and one OpenAPI service that serve, and four sources that serve nothing."""
    return _config(
        tmp_path,
        _upstream("alive"),
        _upstream("dead", command=str(tmp_path / "no-such-server")),
        _upstream("bare", "--bare"),
        _service("shop", _document(tmp_path)),
        _service("gone", tmp_path / "missing.yaml"),
        _service("excluded", _document(tmp_path), 'exclude_operations = ["listItems"]'),
    )


def _lines(text: str, rule: str) -> dict[str, str]:
    """``{source: line}`` of the lines of ``rule`` (``<plugin>: <rule>: '<source>': ...``)."""
    found = {}
    for line in text.splitlines():
        if f": {rule}: '" in line:
            found[line.split(f": {rule}: '", 1)[1].split("'", 1)[0]] = line
    return found


def test_check_fails_naming_each_source_that_serves_nothing_and_its_fix(broken: str) -> None:
    result = run_cli("check", "-c", broken, env=ENV)
    assert result.returncode == 1, result.stdout + result.stderr
    unavailable = _lines(result.stdout, "source-unavailable")
    assert set(unavailable) == {"dead", "bare", "gone", "excluded"}  # alive and shop serve
    assert unavailable["dead"].startswith("upstream: source-unavailable: 'dead': nothing served: upstream 'dead'")
    assert "could not be listed: FileNotFoundError" in unavailable["dead"]
    assert "fix: start the server, check its command" in unavailable["dead"]
    assert "lists no resource, template, tool or prompt" in unavailable["bare"]
    assert unavailable["gone"].startswith("openapi: source-unavailable: 'gone': serves nothing: service 'gone'")
    assert "fix: correct the document's path or URL" in unavailable["gone"]
    assert "every operation of its document is left out" in unavailable["excluded"]
    assert "fix: widen include_operations" in unavailable["excluded"]
    assert not _lines(result.stdout, "left-out")  # said once, as what it is: not a mere advisory
    assert not _lines(result.stdout, "provider-failed-to-start")  # the same sources, already named
    assert "check failed: 4 problem(s)" in result.stdout


def test_check_passes_when_every_configured_source_serves(tmp_path: Path) -> None:
    config = _config(tmp_path, _upstream("alive"), _service("shop", _document(tmp_path)))
    result = run_cli("check", "-c", config, env=ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "source-unavailable" not in result.stdout and "check passed:" in result.stdout


def test_serve_strict_refuses_naming_the_sources_and_plain_serve_warns_and_serves(
    broken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_serving(monkeypatch)
    where = f"127.0.0.1:{free_port()}"
    strict = run_cli("serve", "--strict", "--http", where, "-c", broken, env=ENV)
    assert strict.returncode == 1, strict.stderr
    assert "refusing to start (--strict):" in strict.stderr
    assert set(_lines(strict.stderr, "source-unavailable")) == {"dead", "bare", "gone", "excluded"}
    assert "fix: start the server" in _lines(strict.stderr, "source-unavailable")["dead"]
    plain = run_cli("serve", "--http", where, "-c", broken, env=ENV)
    assert plain.returncode == SERVED, plain.stderr
    warned = [line for line in plain.stderr.splitlines() if line.startswith("unavailable: ")]
    assert len(warned) == 4 and any("'dead': nothing served" in line for line in warned)


def test_a_provider_whose_lifespan_fails_to_start_fails_check_and_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a document naming no server URL, and no base_url: the service's providers fail to start
    config = _config(tmp_path, _upstream("alive"), _service("nowhere", _document(tmp_path, server=False)))
    result = run_cli("check", "-c", config, env=ENV)
    assert result.returncode == 1, result.stdout + result.stderr
    failed = [line for line in result.stdout.splitlines() if ": provider-failed-to-start: " in line]
    assert [line.split("'")[1] for line in failed] == ["openapi-nowhere", "openapi-nowhere-tools"]
    assert all(line.startswith("openapi: ") and "set base_url" in line and "fix: " in line for line in failed)
    no_serving(monkeypatch)
    strict = run_cli("serve", "--strict", "--http", f"127.0.0.1:{free_port()}", "-c", config, env=ENV)
    assert strict.returncode == 1 and "provider-failed-to-start: 'openapi-nowhere'" in strict.stderr


def test_check_prints_one_line_per_problem_and_tracebacks_only_when_verbose(tmp_path: Path) -> None:
    # a fresh process: its log is what an operator sees
    config = _config(
        tmp_path,
        _upstream("alive"),
        _upstream("dead", command=str(tmp_path / "no-such-server")),
        _service("nowhere", _document(tmp_path, server=False)),
    )

    def check(*extra: str) -> subprocess.CompletedProcess[str]:
        argv = [*prefork.python(), "-m", "mcp_providers", "check", "-c", config, *extra]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env={**_env(), "COLUMNS": "400"})

    quiet = check()
    assert quiet.returncode == 1
    assert "Traceback" not in quiet.stderr + quiet.stdout
    assert "failed to start" not in quiet.stderr  # the report's own lines say it, once
    assert len(_lines(quiet.stdout, "provider-failed-to-start")) == 2
    verbose = check("--verbose")  # the log's own lines too; a source that is down needs no traceback
    assert verbose.returncode == 1
    assert "provider 'openapi-nowhere' (plugin 'openapi') failed to start: " in verbose.stderr
    argv = [*prefork.python(), "-m", "mcp_providers", "read", "openapi://nowhere/items", "-c", config]
    read = subprocess.run(argv, capture_output=True, text=True, timeout=120, env={**_env(), "COLUMNS": "400"})
    assert read.returncode == 1 and "Traceback" not in read.stderr + read.stdout  # read and call: the same
    assert "provider 'openapi-nowhere' failed to start" in read.stdout
    assert "error: provider 'openapi-nowhere' (plugin 'openapi') failed to start: service 'nowhere'" in read.stderr
    assert "set base_url" in read.stderr  # the why, which the read's error leaves to the log: one line


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "MCP_PROVIDERS_PLUGINS"}
