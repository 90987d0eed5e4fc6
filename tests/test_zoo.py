"""The broken-plugin zoo: one installed plugin per fault, and what every CLI verb does about it.

The zoo is three small distributions beside ``tests/distributions/test_plugins`` (which already
holds the import, signature, hook and declaration faults): ``zoo_plugins`` (raises on import,
wrong hook return type, prints, read raises, read hangs, one side of an entry-point clash),
``zoo_clash`` (the other side) and ``zoo_twice`` (a good plugin installed into two folders that are
both on ``sys.path``). For each fault ``plugins`` and ``check`` say what is wrong in one line,
``serve`` keeps serving the rest over stdio with a clean stream (once the plugins whose import
failed are left out: those fail closed), and ``serve --strict`` refuses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from prefork import python
from reliability_support import RawStdio, install_target

DISTRIBUTIONS = Path(__file__).parent / "distributions"
READ_TIMEOUT = 1.5
"""server.read_timeout for the zoo: what check, serve --strict and the hanging read wait out (s)."""

# fault -> (plugins that carry it, text that `check` prints for it)
FAULTS: dict[str, tuple[tuple[str, ...], str]] = {
    "raises on import": (
        ("zoo_raises_on_import",),
        "zoo_raises_on_import: rejected: import failed: RuntimeError: zoo plugin refuses to import: ZOO_IMPORT_FAILURE",
    ),
    "missing dependency": (
        ("broken_import",),
        "broken_import: rejected: import failed: ModuleNotFoundError: "
        "No module named 'mcp_providers_test_plugins_missing_dependency'",
    ),
    "hookimpl parameter the spec lacks": (
        ("bad_signature",),
        "bad_signature: rejected: hook signature does not match the hookspec",
    ),
    "hook raises": (
        ("raising_hook",),
        "raising_hook: rejected: hook register_resource_providers raised RuntimeError: the backend is not configured",
    ),
    "hook returns the wrong type": (
        ("zoo_wrong_type",),
        "zoo_wrong_type: rejected: hook register_resource_providers returned dict; expected a list of ResourceProvider",
    ),
    "resource declares a side effect": (("side_effect",), "side_effect: resource-declares-side-effect: 'fx://counter'"),
    "duplicate URI": (
        ("duplicate_uri_a", "duplicate_uri_b"),
        "duplicate_uri_a + duplicate_uri_b: duplicate-uri: 'dup://same'",
    ),
    "URI outside its prefix": (("outside_prefix",), "outside_prefix: outside-prefix: 'theirs://x'"),
    "template the strict parser rejects": (
        ("adjacent_variables",),
        "adjacent_variables: template-invalid: 'adj://{a}{b}'",
    ),
    "prints to stdout": (
        ("zoo_printer",),
        "zoo_printer: read-printed-to-stdout: 'printer://noisy': read() printed to stdout",
    ),
    "read raises": (
        ("zoo_read_raises",),
        "zoo_read_raises: static-read-failed: 'raises://item': RuntimeError",
    ),
    "read hangs": (
        ("zoo_read_hangs",),
        f"zoo_read_hangs: static-read-timeout: 'hangs://item': did not finish within {READ_TIMEOUT} s "
        "(server.read_timeout)",
    ),
    "same entry-point name in two distributions": (
        ("zoo_clash",),
        "zoo_clash: rejected: entry point name 'zoo_clash' is declared by mcp-providers-zoo-",
    ),
}


@pytest.fixture(scope="session")
def zoo_sites(test_plugins_site: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Every zoo distribution installed (at once: each install builds a wheel); zoo_twice installed
    twice, into two folders (the second a copy of the first: the files a second install writes)."""
    sources = ("zoo_plugins", "zoo_clash", "zoo_twice")
    targets = [tmp_path_factory.mktemp(f"site-{source}") for source in sources]
    with ThreadPoolExecutor() as pool:
        list(pool.map(install_target, [DISTRIBUTIONS / source for source in sources], targets))
    again = tmp_path_factory.mktemp("site-zoo_twice")
    shutil.copytree(targets[-1], again, dirs_exist_ok=True)
    return [test_plugins_site, *targets, again]


@pytest.fixture
def zoo_env(zoo_sites: list[Path], tmp_path: Path) -> dict[str, str]:
    """Environment for ``python -m mcp_providers`` with the whole zoo installed and a short deadline."""
    config = tmp_path / "mcp-providers.toml"
    config.write_text(f"[server]\nread_timeout = {READ_TIMEOUT}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, zoo_sites), *filter(None, [env.get("PYTHONPATH")])])
    env["MCP_PROVIDERS_CONFIG"] = str(config)
    return env


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*python(), "-m", "mcp_providers", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        input="",  # a closed pipe: serve sees end of input and stops
    )


def test_the_zoo_distribution_twice_on_sys_path_is_one_plugin(zoo_sites: list[Path]) -> None:
    twice = [site for site in zoo_sites if (site / "mcp_providers_zoo_twice").is_dir()]
    assert len(twice) == 2  # the premise: two copies on the path


def test_check_names_every_fault_in_one_line_each(zoo_env: dict[str, str]) -> None:
    run = cli(zoo_env, "check")
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1].startswith("check failed:")
    for fault, (_, text) in FAULTS.items():
        assert any(line.startswith(text) for line in lines), f"{fault}: {text!r} missing from:\n{run.stdout}"
    clash = next(line for line in lines if line.startswith("zoo_clash: rejected:"))
    assert "mcp-providers-zoo-clash (mcp_providers_zoo_clash)" in clash
    assert "mcp-providers-zoo-plugins (mcp_providers_zoo.runtime:clash)" in clash
    # Nothing a plugin printed landed in check's own output; the good plugins pass.
    assert not [line for line in lines if line.startswith(("ZOO-PRINTER", '{"jsonrpc"'))]
    assert not [line for line in lines if line.startswith(("good", "zoo_twice", "ssg_catalog"))]


def test_plugins_reports_every_fault_and_lists_the_twice_installed_plugin_once(zoo_env: dict[str, str]) -> None:
    run = cli(zoo_env, "plugins", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)  # the printer printed at import: stdout must still be pure JSON
    rows = report["plugins"]
    names = [row["name"] for row in rows]
    assert names.count("zoo_twice") == 1 and names.count("zoo_clash") == 1
    by_name = {row["name"]: row for row in rows}
    assert by_name["zoo_twice"]["status"] == "loaded"
    assert by_name["zoo_twice"]["distribution"] == "mcp-providers-zoo-twice"
    assert by_name["good"]["status"] == "loaded"
    runtime = {"prints to stdout", "read raises", "read hangs"}  # only a read shows these
    for fault, (plugins, text) in FAULTS.items():
        for name in plugins:
            row = by_name[name]
            if fault in runtime:
                assert row["status"] == "loaded", (fault, row)
                continue
            assert row["status"] == "rejected", (fault, row)
            reason = row["reason"]
            assert reason and "\n" not in reason
            if ": rejected: " in text:
                assert text.split(": rejected: ", 1)[1].startswith(reason[:40]), (fault, reason)
            else:
                assert reason == "failed checks (see mcp-providers check)"
                assert any(p.startswith(text) for p in report["problems"]), (fault, report["problems"])
    assert "ZOO-PRINTER: printed at import" in run.stderr


@pytest.mark.parametrize("fault", [*FAULTS])
def test_serve_strict_refuses_to_start(zoo_env: dict[str, str], fault: str) -> None:
    plugins, text = FAULTS[fault]
    env = dict(zoo_env, MCP_PROVIDERS_PLUGINS=",".join(("good", *plugins)))
    if "zoo_clash" not in plugins:  # a clash is refused whatever is selected: leave its other half out
        env["PYTHONPATH"] = os.pathsep.join(p for p in env["PYTHONPATH"].split(os.pathsep) if "site-zoo_clash" not in p)
    run = cli(env, "serve", "--strict")
    assert run.returncode == 1, run.stderr
    assert "refusing to start (--strict)" in run.stderr
    assert text in run.stderr
    assert run.stdout == ""


def test_serve_strict_starts_with_the_good_and_the_twice_installed_plugin(zoo_env: dict[str, str]) -> None:
    env = dict(zoo_env, MCP_PROVIDERS_PLUGINS="good,zoo_twice")
    env["PYTHONPATH"] = os.pathsep.join(p for p in env["PYTHONPATH"].split(os.pathsep) if "site-zoo_clash" not in p)
    run = cli(env, "serve", "--strict")  # stdin is empty: the server starts, sees EOF and stops
    assert run.returncode == 0, run.stderr
    assert "refusing" not in run.stderr


@pytest.mark.anyio
async def test_serve_keeps_serving_the_others_over_a_clean_stdio_stream(
    zoo_env: dict[str, str], tmp_path: Path
) -> None:
    # The plugins whose import failed are left out: what they would register is unknown, so serve
    # would refuse (fail closed; test_policy_by_construction). Every other fault is served around.
    env = dict(zoo_env, MCP_PROVIDERS_DISABLE="broken_import,zoo_raises_on_import")
    params = StdioServerParameters(
        command=sys.executable, args=[*python()[1:], "-m", "mcp_providers", "serve"], env=env
    )
    errlog = tmp_path / "stderr.txt"
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err), cache=None) as client:
            uris = {r.uri for r in (await client.list_resources()).resources}
            assert {"good://colours", "twice://hello", "printer://noisy", "raises://item", "hangs://item"} <= uris
            assert not uris & {"dup://same", "fx://counter", "theirs://x", "clash-a://item", "clash-b://item"}

            printed = await client.read_resource("printer://noisy")
            assert isinstance(printed.contents[0], types.TextResourceContents)
            assert printed.contents[0].text == "the printer's content"
            # The session survives the prints: more requests, answered correctly and in order.
            for colour in ("red", "green", "blue"):
                read = await client.read_resource(f"good://colours/{colour}")
                assert read.contents[0].text == f"{colour} is a colour"  # type: ignore[union-attr]
            assert (await client.call_tool("mix", {"a": "red", "b": "blue"})).structured_content == {
                "mixed": "red-blue"
            }

            with pytest.raises(MCPError) as raised:
                await client.read_resource("raises://item")
            assert raised.value.error.code == types.INTERNAL_ERROR
            assert raised.value.error.message == (
                "provider 'zoo-raises' (plugin 'zoo_read_raises') failed reading raises://item; "
                "the server log has the details"
            )
            assert "ZOO-INTERNAL-DETAIL" not in json.dumps(raised.value.error.model_dump(mode="json"))

            # A hanging read is cut off at the deadline while other reads proceed.
            hang: dict[str, object] = {}
            others_done_while_hanging: list[bool] = []

            async def read_hanging() -> None:
                try:
                    await client.read_resource("hangs://item")
                except MCPError as exc:
                    hang["error"] = exc.error
                hang["done"] = True

            async with anyio.create_task_group() as tg:
                tg.start_soon(read_hanging)
                for _ in range(5):
                    twice = await client.read_resource("twice://hello")
                    assert twice.contents[0].text == "hello once"  # type: ignore[union-attr]
                    ssgs = await client.read_resource("documcp://ssgs/available")
                    assert ssgs.contents[0].uri == "documcp://ssgs/available"
                    others_done_while_hanging.append("done" not in hang)
            error = hang["error"]
            assert isinstance(error, types.ErrorData)
            assert error.code == -32005
            assert error.message == (
                f"provider 'zoo-hangs' did not finish reading hangs://item within {READ_TIMEOUT} s "
                "(server.read_timeout); try again later or ask the operator to raise the deadline"
            )
            assert all(others_done_while_hanging)
            after = await client.read_resource("good://colours")
            assert after.contents[0].text == "red\ngreen\nblue"  # type: ignore[union-attr]
    log = errlog.read_text()
    assert "ZOO-PRINTER: printed during a read" in log  # diverted to stderr, not lost
    assert "ZOO-PRINTER: written to fd 1 during a read" in log
    assert "ZOO-INTERNAL-DETAIL" in log  # the traceback is for the operator


def test_printing_plugin_never_reaches_the_raw_stdout_stream(zoo_env: dict[str, str], tmp_path: Path) -> None:
    """Every byte on stdout is a JSON-RPC response to a request this test sent, in order."""
    env = dict(zoo_env, MCP_PROVIDERS_DISABLE="broken_import,zoo_raises_on_import")  # as above
    with RawStdio(env, tmp_path / "stderr.txt") as server:
        server.initialize()
        for _ in range(3):
            answer = server.request("resources/read", {"uri": "printer://noisy"})
            assert answer["result"]["contents"][0]["text"] == "the printer's content"
            answer = server.request("resources/read", {"uri": "good://colours/green"})
            assert answer["result"]["contents"][0]["text"] == "green is a colour"
        assert server.stray_lines == []
    assert "ZOO-PRINTER: printed during a read" in (tmp_path / "stderr.txt").read_text()
