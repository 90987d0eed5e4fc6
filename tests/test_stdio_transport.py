"""``serve_stdio``: the asyncio-pipe stdio transport ``serve`` uses, in both protocol eras, and its
fallback to the SDK's transport (``serve_sdk_stdio``) where pipes do not apply."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from prefork import python
from reliability_support import INIT, INITIALIZED

pytestmark = pytest.mark.anyio


def _read(id_: int, uri: str) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": id_, "method": "resources/read", "params": {"uri": uri}}


@pytest.mark.parametrize("transport", ["ours", "sdk"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_serve_over_stdio_in_both_eras(mode: str, transport: str) -> None:
    env = {**os.environ, "MCP_PROVIDERS_STDIO": transport}
    params = StdioServerParameters(
        command=sys.executable, args=[*python()[1:], "-m", "mcp_providers", "serve"], env=env
    )
    async with Client(params, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        listed = await client.list_resources()
        assert "documcp://ssgs/available" in [r.uri for r in listed.resources]
        hugo = await client.read_resource("documcp://ssgs/hugo")
        assert json.loads(hugo.contents[0].text)["id"] == "hugo"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as missing:
            await client.read_resource("documcp://ssgs/nope")
        assert missing.value.code == types.INVALID_PARAMS


def test_bad_and_blank_lines_do_not_stop_the_server() -> None:
    # The junk line is answered with -32700 (id null) and the server reads on.
    lines = [
        json.dumps(INIT) + "\n",
        json.dumps(INITIALIZED) + "\n",
        "\n",
        "this is not json\n",
        json.dumps(_read(2, "documcp://ssgs/hugo")) + "\n",
    ]
    # stdin from a pipe that closes after the last line: the answers must all arrive first.
    proc = subprocess.Popen(
        [*python(), "-m", "mcp_providers", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(lines))
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(3)]
    proc.stdin.close()
    proc.wait(timeout=30)
    assert proc.stderr is not None
    proc.stderr.close()
    proc.stdout.close()
    by_id = {a.get("id"): a for a in answers}
    assert by_id[1]["result"]["protocolVersion"] == "2025-11-25"
    assert by_id[None]["error"]["code"] == -32700
    assert json.loads(by_id[2]["result"]["contents"][0]["text"])["id"] == "hugo"


# A server whose only resource prints to stdout while it is read, then prints after serving:
# the stray print must land on stderr, and stdout must be the wire again after exit.
PRINTING_SERVER = textwrap.dedent(
    """
    import sys, anyio, mcp_types as types
    from mcp.server import Server
    from mcp_providers._serve.transport.stdio_loop import serve_stdio

    async def read(ctx, params):
        print("stray output from a provider")
        sys.stdout.flush()
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text="ok")])

    async def listing(ctx, params):
        return types.ListResourcesResult(resources=[])

    server = Server("printer", on_read_resource=read, on_list_resources=listing)
    server.middleware = []

    print("before serving")
    anyio.run(serve_stdio, server)
    print("after serving")
    """
)


def _lines_of(path: Path, count: int) -> list[str]:
    """The first ``count`` lines written to ``path``, waited for (up to 30 s)."""
    deadline = time.monotonic() + 30
    while len(lines := path.read_text().splitlines(keepends=True)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return lines[:count]


@pytest.mark.parametrize("stdout_kind", ["pipe", "file"])
def test_stray_prints_go_to_stderr_and_stdout_is_restored(stdout_kind: str, tmp_path: Path) -> None:
    # "file": stdout a regular file, which asyncio pipes cannot take; the SDK fallback keeps the guard.
    lines = [json.dumps(INIT) + "\n", json.dumps(INITIALIZED) + "\n", json.dumps(_read(2, "x://y")) + "\n"]
    out_path = tmp_path / "stdout.txt"
    with out_path.open("w") as out_file:
        proc = subprocess.Popen(
            [sys.executable, "-c", PRINTING_SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE if stdout_kind == "pipe" else out_file,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write("".join(lines))
    proc.stdin.flush()
    # Every answer is written before end of input is sent.
    head = [proc.stdout.readline() for _ in range(3)] if proc.stdout is not None else _lines_of(out_path, 3)
    proc.stdin.close()
    rest = proc.stdout.read() if proc.stdout is not None else None
    err = proc.stderr.read()
    proc.wait(timeout=30)
    if proc.stdout is not None:
        proc.stdout.close()
    else:
        rest = out_path.read_text().removeprefix("".join(head))
    proc.stderr.close()
    assert head[0] == "before serving\n"
    wire = [json.loads(line) for line in head[1:]]
    assert [m["id"] for m in wire] == [1, 2]
    assert wire[1]["result"]["contents"][0]["text"] == "ok"
    assert "stray output from a provider" in err
    assert rest == "after serving\n"


def test_regular_file_stdin_falls_back_to_the_sdk_transport(tmp_path: Path) -> None:
    # A real subprocess with stdin from a file: asyncio cannot register it, the SDK's stdio serves.
    # Only the handshake is asked: the SDK ends requests still running at end of input unanswered.
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(INIT) + "\n")
    with requests.open() as stdin:
        done = subprocess.run(
            [*python(), "-m", "mcp_providers", "serve"],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert json.loads(done.stdout.splitlines()[0])["result"]["protocolVersion"] == "2025-11-25"
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_serve_with_stdin_from_the_null_device_exits_at_end_of_input() -> None:
    import subprocess

    # /dev/null is a character device asyncio cannot poll; the server must still see end of input.
    with open("/dev/null", "rb") as null:
        run = subprocess.run([*python(), "-m", "mcp_providers", "serve"], stdin=null, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()
    assert b"Traceback" not in run.stderr and run.stdout == b""
