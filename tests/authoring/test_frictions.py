"""The newcomer's frictions of issue 39 (build 6), each as a test."""

from __future__ import annotations

import socket
import subprocess
import sys

from prefork import python


def test_version_answers_without_importing_the_cli_or_the_sdk() -> None:
    code = (
        "import sys; sys.argv = ['mcp-providers', '--version']\n"
        "from mcp_providers.__main__ import main\n"
        "main()\n"
        "print(sorted(m for m in ('mcp', 'typer', 'rich', 'mcp_providers.cli') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    line, loaded = done.stdout.strip().splitlines()
    assert line.startswith("mcp-providers ") and "MCP Python SDK mcp" in line
    assert loaded == "[]"


def test_serve_http_on_a_taken_port_says_so_and_never_says_it_serves() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*python(), "-m", "mcp_providers", "serve", "--http", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "serving MCP on" not in done.stderr
    assert "Traceback" not in done.stderr


def test_a_fresh_check_of_the_built_in_plugins_warns_about_nothing(tmp_path: object) -> None:
    from cli_support import run_cli

    done = run_cli("check", env={"MCP_PROVIDERS_CONFIG": None})
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("warning:")] == []


def test_reading_under_a_rejected_plugin_says_it_is_unavailable() -> None:
    import anyio
    import pytest
    from mcp import MCPError

    from mcp_providers.plugin import Plugin
    from mcp_providers.testing import compose, connect

    broken, fine = Plugin("broken", prefixes=["broken://"]), Plugin("fine", prefixes=["fine://"])

    @broken.template("broken://{a}/{b}")
    def page(a: str) -> str:  # {b} has no parameter: the plugin is rejected at composition
        return a

    fine.resource("fine://x")(lambda: "x")
    composition = compose({"broken": broken, "fine": fine}, strict=False)

    async def read(uri: str) -> MCPError:
        async with connect(composition) as client:
            assert (await client.read_resource("fine://x")).contents[0].text == "x"  # type: ignore[union-attr]
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            return refused.value

    unavailable = anyio.run(read, "BROKEN://one/two")
    assert unavailable.error.code == -32602
    assert "(broken) is unavailable on this server" in unavailable.error.message
    assert "{a}" not in unavailable.error.message  # nothing of what it would serve
    nothing = anyio.run(read, "other://x")
    assert "unavailable" not in nothing.error.message


def test_the_plugins_table_folds_long_names_at_80_columns() -> None:
    from cli_support import run_cli

    done = run_cli("plugins", env={"COLUMNS": "80", "MCP_PROVIDERS_CONFIG": None})
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    assert "config_templ" in done.stdout  # present, folded over lines where it must be
