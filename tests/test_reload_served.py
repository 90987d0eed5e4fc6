"""Live composition end to end: ``mcp-providers serve`` over stdio and HTTP with real SDK clients
of both eras, reloaded by SIGHUP, by ``mcp-providers reload --url`` and after a distribution was
installed into its environment (issue 26, must-shows 1 and 2)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from cli_support import run_cli, whole_env
from mcp import Client, MCPError, StdioServerParameters
from prefork import python
from real_parts import redis_server
from reload_support import EXTRA_URI, NOTES_URI, site
from serve_support import free_port, serve_process
from waiting import HANG_SECONDS, await_until, log_count, wait_until

pytestmark = pytest.mark.anyio

OFF = 'allow = ["notes", "extra"]\ndeny = ["extra"]\n'
ON = 'allow = ["notes", "extra"]\n'
ADMIN = '\n[server.admin]\ntoken_env = "RELOAD_TEST_ADMIN_TOKEN"\n'
TOKEN = "t" * 40

LATE_MODULE = """
from mcp_providers import Content, Resource, ResourceProvider, hookimpl


class Late(ResourceProvider):
    name = "late"
    prefixes = ("late://shelf/",)

    def resources(self):
        return [Resource(uri="late://shelf/new", name="new")]

    async def read(self, request):
        return Content(text="installed while serving")


@hookimpl
def register_resource_providers():
    return [Late()]
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    root = site(tmp_path / "site", ("notes", "extra"))
    out = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    out["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    out["RELOAD_TEST_ADMIN_TOKEN"] = TOKEN
    return out


def _text(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


class Told:
    """``notifications/resources/list_changed`` a 2025-era client received."""

    def __init__(self) -> None:
        self.count = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            self.count += 1

    async def wait(self, count: int) -> None:
        await await_until(lambda: self.count >= count, f"the client told of {count} list changes", every=0.02)


async def _resources(client: Client) -> list[str]:
    return [str(r.uri) for r in (await client.list_resources()).resources]


async def _flip(config: Path, text: str, reload: Any, told: Told | None, stream: Any, count: int) -> None:
    """Write ``text`` into ``config``, ``reload()``, and wait until the client is told."""
    config.write_text(text)
    reload()
    if told is not None:
        await told.wait(count)
    else:
        with anyio.fail_after(HANG_SECONDS):  # a hang guard: the event is what is awaited
            async for event in stream:
                assert type(event).__name__ == "ResourcesListChanged"
                break


async def _served_both_ways(client: Client, config: Path, reload: Any, told: Told | None, stream: Any) -> None:
    assert await _resources(client) == [NOTES_URI]
    await _flip(config, ON, reload, told, stream, 1)
    assert EXTRA_URI in await _resources(client)
    assert _text(await client.read_resource(EXTRA_URI)) == "in the box"
    await _flip(config, OFF, reload, told, stream, 2)
    assert await _resources(client) == [NOTES_URI]
    with pytest.raises(MCPError) as gone:
        await client.read_resource(EXTRA_URI)
    assert "Unknown resource" in gone.value.message


@pytest.mark.parametrize(("mode", "trigger"), [("legacy", "SIGHUP"), ("auto", "SIGHUP"), ("legacy", "--watch")])
async def test_a_reload_over_stdio_tells_the_client_and_serves_the_new_plugin(
    env: dict[str, str], tmp_path: Path, mode: str, trigger: str
) -> None:
    config, pidfile = tmp_path / "mcp-providers.toml", tmp_path / "pid"
    config.write_text(OFF)
    watch = " --watch" if trigger == "--watch" else ""
    launch = shlex.join(python())  # through the fork server: SIGHUP to the launcher is forwarded to serve
    script = f'echo $$ > "{pidfile}"; exec {launch} -m mcp_providers serve -c "{config}"{watch}'
    params = StdioServerParameters(command="sh", args=["-c", script], env=env)
    told = Told() if mode == "legacy" else None
    sighup = lambda: os.kill(int(pidfile.read_text()), signal.SIGHUP) if not watch else None  # noqa: E731
    async with Client(params, mode=mode, cache=None, message_handler=told) as client:  # type: ignore[arg-type]
        if told is not None:
            await _served_both_ways(client, config, sighup, told, None)
        else:
            async with client.listen(resources_list_changed=True) as stream:
                await _served_both_ways(client, config, sighup, None, stream)


@contextlib.contextmanager
def _http(env: dict[str, str], config: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    with serve_process(env, config.with_suffix(".log"), "-c", str(config), *extra) as served:
        yield served


def _ready(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/readyz", timeout=5) as answer:
        body: dict[str, Any] = json.loads(answer.read())
        return body


@pytest.mark.parametrize(("mode", "extra"), [("legacy", ()), ("auto", ()), ("auto", ("--stateless",))])
async def test_sighup_over_http_tells_the_client_and_serves_the_new_plugin(
    env: dict[str, str], tmp_path: Path, mode: str, extra: tuple[str, ...]
) -> None:
    config = tmp_path / "mcp-providers.toml"
    config.write_text(OFF)
    with _http(env, config, *extra) as (base, proc):
        told = Told() if mode == "legacy" else None
        sighup = lambda: proc.send_signal(signal.SIGHUP)  # noqa: E731
        async with Client(f"{base}/mcp", mode=mode, cache=None, message_handler=told) as client:  # type: ignore[arg-type]
            if told is not None:
                await _served_both_ways(client, config, sighup, told, None)
            else:
                async with client.listen(resources_list_changed=True) as stream:
                    await _served_both_ways(client, config, sighup, None, stream)
        ready = _ready(base)
        assert ready["generation"] == 3 and ready["last_reload"]["trigger"] == "SIGHUP"


def _wheel(where: Path, name: str, version: str, entry_points: dict[str, str], module: str) -> Path:
    """A wheel of one module and its entry points (what `uv build` makes of such a project)."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {
        f"{next(iter(entry_points.values())).split(':')[0]}.py": module,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[mcp_providers]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()),
    }
    rows = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*rows, f"{info}/RECORD,,"]) + "\n"
    wheel = where / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def _pip_install(wheel: Path, target: Path) -> None:
    """Install ``wheel`` into the served process's site folder with a real installer (uv's pip)."""
    from real_parts import require_tool

    uv = require_tool("uv", "pip install uv")
    done = subprocess.run([uv, "pip", "install", "--no-deps", "--python", sys.executable, "--target", str(target),
                           str(wheel)], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr


def _reload_cli(base: str, env: dict[str, str], token: str = TOKEN) -> subprocess.CompletedProcess[str]:
    """``mcp-providers reload --url`` in this process (cli_support; the server is the process)."""
    args = ["--url", base, "--token-env", "RELOAD_TEST_ADMIN_TOKEN"]
    return run_cli("reload", *args, env=whole_env({**env, "RELOAD_TEST_ADMIN_TOKEN": token}))


async def test_a_distribution_installed_while_serving_is_served_after_reload_cli(
    env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "mcp-providers.toml"
    config.write_text(ON + ADMIN)
    with _http(env, config) as (base, _proc):
        async with Client(f"{base}/mcp", cache=None) as client:  # type: ignore[arg-type]
            root = Path(env["PYTHONPATH"].split(os.pathsep)[0])
            _pip_install(_wheel(tmp_path, "late_dist", "1.0", {"late": "late_plugin"}, LATE_MODULE), root)
            config.write_text('allow = ["notes", "extra", "late"]\n' + ADMIN)
            done = _reload_cli(base, env)
            assert done.returncode == 0, done.stderr + done.stdout
            assert "reload applied" in done.stdout and "changed: resources" in done.stdout
            assert "late://shelf/new" in await _resources(client)
            assert _text(await client.read_resource("late://shelf/new")) == "installed while serving"
            config.write_text('allow = ["notes", "extra", "late"]\ndeny = ["nope"]\n' + ADMIN)
            failed = _reload_cli(base, env)  # a bad config: exit 1, the problem printed, still serving
            assert failed.returncode == 1 and "problem:" in failed.stdout and "nope" in failed.stdout
            assert _text(await client.read_resource("late://shelf/new")) == "installed while serving"
            refused = _reload_cli(base, env, token="x" * 40)  # a token [server.admin] does not name
            assert refused.returncode == 2 and "403" in refused.stderr
            assert TOKEN not in refused.stderr + refused.stdout + failed.stdout + failed.stderr
        ready = _ready(base)
        assert ready["status"] == "ready" and ready["last_reload"]["outcome"] == "failed"
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as page:
            metrics = page.read().decode()
        assert 'mcp_providers_reload_total{outcome="applied"} 1.0' in metrics
        assert 'mcp_providers_reload_total{outcome="failed"} 1.0' in metrics
        assert f'mcp_providers_config_info{{digest="{ready["config_digest"]}"}} 1.0' in metrics


async def test_a_reload_announced_on_the_cluster_bus_reaches_both_replicas(env: dict[str, str], tmp_path: Path) -> None:
    with redis_server() as (redis_url, _):
        cluster = f'\n[cluster]\nredis_url = "{redis_url}"\nkey_prefix = "reload-test"\n'
        config = tmp_path / "mcp-providers.toml"  # one file for both replicas, as one ConfigMap would be
        config.write_text(OFF + ADMIN + cluster)
        with _http(env, config) as (a, _), _http(env, config) as (b, _):
            before = _ready(a)["config_digest"]
            assert _ready(b)["config_digest"] == before
            async with Client(f"{b}/mcp", cache=None) as on_b:  # type: ignore[arg-type]
                assert await _resources(on_b) == [NOTES_URI]
                config.write_text(ON + ADMIN + cluster)
                args = ["--url", a, "--cluster", "--token-env", "RELOAD_TEST_ADMIN_TOKEN"]
                done = run_cli("reload", *args, env=whole_env(env))  # in process (cli_support)
                assert done.returncode == 0 and "announced" in done.stdout, done.stdout + done.stderr
                await await_until(lambda: _ready(b)["generation"] == 2, "replica B reloaded (generation 2)")
                assert EXTRA_URI in await _resources(on_b)
            ready_a, ready_b = _ready(a), _ready(b)
            assert ready_a["config_digest"] == ready_b["config_digest"] != before
            assert ready_b["last_reload"]["trigger"] == "cluster" and ready_a["last_reload"]["trigger"] == "admin"
            assert ready_a["generation"] == ready_b["generation"] == 2  # A did not reload a second time


async def test_a_read_in_flight_over_http_during_a_reload_completes_with_the_old_content(
    env: dict[str, str], tmp_path: Path
) -> None:
    config, hold = tmp_path / "mcp-providers.toml", tmp_path / "hold"
    hold.mkdir()
    warn = '[server]\nside_effects = { notes = "warn" }\n'  # the held read writes its marker file
    config.write_text(ON + warn + '[plugins.notes]\ntext = "first"\n')
    with _http({**env, "RELOAD_TEST_HOLD": str(hold)}, config) as (base, proc):
        async with Client(f"{base}/mcp", cache=None) as client:  # type: ignore[arg-type]
            results: list[str] = []

            async def read() -> None:
                results.append(_text(await client.read_resource(NOTES_URI)))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(read)
                await await_until((hold / "held").exists, "the read is held in the provider", alive=proc, every=0.02)
                config.write_text(ON + warn + '[plugins.notes]\ntext = "second"\n')
                proc.send_signal(signal.SIGHUP)
                await await_until(lambda: _ready(base)["generation"] == 2, "the SIGHUP reloaded", alive=proc)
                assert _text(await client.read_resource(NOTES_URI)) == "second"
                assert not results
                (hold / "release").write_text("")
            assert results == ["first"]


async def test_sighup_to_serve_workers_reloads_every_worker_and_keeps_the_supervisor(
    env: dict[str, str], tmp_path: Path
) -> None:
    with redis_server() as (redis_url, _):
        cluster = f'\n[cluster]\nredis_url = "{redis_url}"\nkey_prefix = "reload-workers"\n'
        config = tmp_path / "mcp-providers.toml"
        config.write_text(OFF + cluster)
        with _http(env, config, "--workers", "2", "--stateless", "--json-response") as (base, proc):
            log = config.with_suffix(".log")
            # Was flaky under load (round 4 item 25): /readyz answers once ONE worker serves, and a
            # worker still starting when the config changed read the new one at start-up, so its
            # SIGHUP found nothing to apply and the test waited for a second "applied" that never
            # came. Each worker prints "serving MCP on URL" once it has read its config (the
            # supervisor's own line adds "with 2 workers"): wait for both, then change the config.
            serving = f"serving MCP on {base}/mcp\n"
            both = lambda: log_count(log, serving) >= 2  # noqa: E731
            await await_until(both, "both workers read their config", alive=proc, log=log)
            config.write_text(ON + cluster)
            proc.send_signal(signal.SIGHUP)  # to the supervisor, as `mcp-providers reload --pid` sends it
            # each worker logs its own reload (after swapping): which worker accepts a connection is
            # the kernel's choice, so sampling /readyz alone could miss one still on generation 1
            await await_until(
                lambda: log_count(log, "applied: config") >= 2, "both workers reloaded", alive=proc, log=log
            )
            assert {_ready(base)["generation"] for _ in range(20)} == {2}  # and every worker's /readyz says so
            assert proc.poll() is None  # the supervisor is still there
            async with Client(f"{base}/mcp", cache=None) as client:  # type: ignore[arg-type]
                assert EXTRA_URI in await _resources(client)


def _catches_sighup(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGHUP (bit 0 of ``SigCgt`` in /proc/PID/status)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & 1)
    return False


def test_a_sighup_during_start_up_is_held_not_fatal(env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "mcp-providers.toml"
    config.write_text(OFF)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_providers", "serve", "-c", str(config), "--http", f"127.0.0.1:{port}"],
        env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # held from the first thing serve does
        wait_until(lambda: _catches_sighup(proc.pid), "serve holds SIGHUP", alive=proc, every=0.005)  # type: ignore[arg-type]
        with contextlib.closing(__import__("socket").socket()) as probe:  # not listening yet: still starting
            assert probe.connect_ex(("127.0.0.1", port)) != 0, "SIGHUP was caught only once serving"
        for _ in range(3):
            proc.send_signal(signal.SIGHUP)  # long before the server is ready
        base = f"http://127.0.0.1:{port}"

        def reloaded() -> dict[str, Any] | None:
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{base}/readyz", timeout=2) as answer:
                ready: dict[str, Any] = json.loads(answer.read())
                return ready if ready.get("last_reload") else None
            return None

        # a SIGHUP during start-up that ended the server fails this at once (alive=)
        body = wait_until(reloaded, "the held SIGHUP was reloaded", alive=proc)  # type: ignore[arg-type]
        assert body["last_reload"]["trigger"] == "SIGHUP" and body["status"] == "ready"
    finally:
        proc.terminate()
        proc.wait(timeout=15)
