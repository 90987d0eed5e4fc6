"""Issue 43, "Nothing global unless asked": a composition embedded with ``mount()`` patches nothing
of its host by default and still refuses what needs no patch (files, processes, requests of the
client the framework hands providers); ``side_effects="enforce"`` installs every guard ``serve``
does, and the same attempts are all refused.

The host is a process of its own (``embedded_host.py``): this suite's process has every guard
installed already, by the tests that ask for them.
"""

from __future__ import annotations

import json
import os
import posix
import subprocess
import sys
from typing import Any

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REFUSED = -32008  # SideEffectRefused
EVERY_PATCH = [
    "socket.socket.send",
    "socket.socket.sendall",
    "ssl.SSLSocket.write",
    "ssl.SSLObject.write",
    "os.open",
    "os.write",
    "builtins.open",
    "http.client.HTTPConnection.putrequest",
    "logging.FileHandler.__init__",
    "threading.Thread.start",
    "concurrent.futures.ThreadPoolExecutor.submit",
    "sys.meta_path: mcp_providers._sideeffects.imports._PatchingFinder",
]


@pytest.fixture(scope="module")
def host() -> dict[str, Any]:
    """What the host process saw (one run for the whole module)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_PROVIDERS_", "PYDANTIC_"))}
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, "embedded_host.py")], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def test_import_pauses_no_collector_and_leaves_pydantics_loader_alone(host: dict[str, Any]) -> None:
    assert host["gc enabled after import"] is True
    assert host["gc.disable called by"] == []
    assert host["pydantic loader called by mcp_providers"] == []


def test_mounted_by_default_nothing_of_the_host_is_patched(host: dict[str, Any]) -> None:
    scoped = host["scoped"]
    assert scoped["changed"] == []  # send methods, os.open, open, http.client, logging, sys.meta_path
    assert scoped["functions changed"] == []  # nothing of os, posix, io, _io, builtins either
    assert scoped["task factory"] is None


def test_mounted_by_default_what_needs_no_patch_is_still_refused(host: dict[str, Any]) -> None:
    answers = host["scoped"]["answers"]
    assert answers["file"] == REFUSED  # the audit hook, scoped to provider code
    assert answers["unix-socket-bind"] == REFUSED  # its socket.bind event
    assert answers["process"] == REFUSED
    assert answers["signal"] == answers["native-code"] == REFUSED  # their audit events (os.kill, ctypes)
    assert answers["framework-client-post"] == REFUSED  # mcp_providers.http.client's own judge
    assert host["scoped"]["files"] == []
    # What only the process-wide patches see is the host's to opt into: served, and it arrived.
    assert answers["urllib-post"] == answers["raw-socket-post"] == answers["interpreter-limit"] == "served"
    assert host["scoped reached"] == ["/scoped/raw-socket-post", "/scoped/urllib-post"]
    # A bare thread the read starts has a context of its own: following it means patching threading.
    assert answers["thread-file"] == "served"
    assert host["scoped"]["thread files"] == ["scoped.txt"]


def test_opted_in_every_guard_is_installed_and_every_attempt_refused(host: dict[str, Any]) -> None:
    enforce = host["enforce"]
    assert enforce["changed"] == EVERY_PATCH
    # Each guarded function under every name that reaches it: os re-exports posix's functions.
    functions = set(enforce["functions changed"])
    assert {"posix.write", "posix.splice", "posix.open", "posix.mkfifo", "posix.rename", "posix.umask"} <= functions
    assert {"posix.kill", "posix.setuid", "posix.nice", "signal.alarm", "sys.setrecursionlimit"} - functions == {
        "posix.kill"  # audited: judged by the hook, never wrapped
    }
    assert {"socket.setdefaulttimeout", "_posixshmem.shm_open", "_posixshmem.shm_unlink"} <= functions
    assert {"_io.open", "io.open", "builtins.open"} <= functions
    assert sorted(f"posix.{n[3:]}" for n in functions if n.startswith("os.") and hasattr(posix, n[3:])) == sorted(
        n for n in functions if n.startswith("posix.")
    )
    assert enforce["task factory"] is True
    assert enforce["answers"] == dict.fromkeys(
        [
            *("file", "unix-socket-bind", "process", "signal", "native-code", "interpreter-limit"),
            *("framework-client-post", "urllib-post", "raw-socket-post", "thread-file"),
        ],
        REFUSED,
    )
    assert host["enforce reached"] == []  # refused before anything was sent
    assert enforce["files"] == []
    assert enforce["thread files"] == ["scoped.txt"]  # the scoped run's only


def test_the_config_key_and_mounts_argument_choose_what_a_composition_installs() -> None:
    from mcp.server import Server
    from starlette.applications import Starlette

    from mcp_providers import Config, ServerSettings, compose
    from mcp_providers.embedding import attach, mount

    assert compose(load_entrypoints=False).runtime.process_guards is False  # embedded: patch nothing
    asked = compose(Config(server=ServerSettings(embedded_side_effects="enforce")), load_entrypoints=False)
    assert asked.runtime.process_guards is True
    mount(Starlette(), asked, side_effects="scoped")  # the argument wins over the config
    assert asked.runtime.process_guards is False
    attached = compose(load_entrypoints=False)
    attach(Server("host"), attached, side_effects="enforce")
    assert attached.runtime.process_guards is True


def test_mount_rejects_an_unknown_side_effects_value() -> None:
    from starlette.applications import Starlette

    from mcp_providers import compose
    from mcp_providers.embedding import mount

    with pytest.raises(
        ValueError, match=r"side_effects must be 'scoped' \(patch nothing of this process\) or 'enforce'; got 'warn'"
    ):
        mount(Starlette(), compose(load_entrypoints=False), side_effects="warn")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_framework_clients_judge_stays_its_first_hook_when_hooks_are_replaced() -> None:
    import httpx2

    from mcp_providers import SideEffectRefused
    from mcp_providers import http as core_http

    seen: list[str] = []

    async def hook(request: httpx2.Request) -> None:
        seen.append(request.method)

    sent = httpx2.MockTransport(lambda request: httpx2.Response(200))  # no pool, no socket: the hook alone judges
    async with core_http.client(transport=sent, event_hooks={"request": [hook]}) as client:
        client.event_hooks = {"request": [hook]}
        with core_http.read_scope("emb://x"), pytest.raises(SideEffectRefused, match=r"a POST to http://up\.test/x"):
            await client.post("http://up.test/x", content=b"x")
        assert seen == []  # refused before any other hook ran
        assert (await client.get("http://up.test/x")).status_code == 200  # outside a scope: sent
    assert seen == ["GET"]
