"""Live reload under attack with real processes: ``mcp-providers reload`` aimed at the wrong
process or asking for a cluster roll-out a server cannot make (issue 26).

The servers are processes; the ``reload`` commands aimed at them run in this process
(:func:`cli_support.run_cli`), since what they print and exit with is what is tested."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_cli, whole_env
from mcp import Client, MCPError
from prefork import python
from reload_support import NOTES_URI, install, site
from serve_support import free_port
from test_reload_served import ADMIN, ON, TOKEN, _http
from waiting import log_count, wait_until

pytestmark = pytest.mark.anyio


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    root = site(tmp_path / "site", ("notes", "extra"))
    out = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    out["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    out["RELOAD_TEST_ADMIN_TOKEN"] = TOKEN
    return out


def _generation(base: str) -> int:
    with urllib.request.urlopen(f"{base}/readyz", timeout=5) as answer:
        return int(json.loads(answer.read())["generation"])


def test_reload_pid_refuses_a_process_that_is_not_a_server_and_signals_one_that_is(
    env: dict[str, str], tmp_path: Path
) -> None:
    bystander = subprocess.Popen(["sleep", "120"])  # SIGHUP's default action would end it
    try:
        done = run_cli("reload", "--pid", str(bystander.pid), env=whole_env(env))
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"process {bystander.pid} is not an mcp-providers server" in done.stderr
        assert f"kill -HUP {bystander.pid}" in done.stderr
        assert bystander.poll() is None  # not signalled
    finally:
        bystander.kill()
        bystander.wait()
    config = tmp_path / "mcp-providers.toml"
    config.write_text('allow = ["notes", "extra"]\ndeny = ["extra"]\n')
    with _http(env, config) as (base, proc):
        config.write_text(ON)
        done = run_cli("reload", "--pid", str(proc.pid), env=whole_env(env))
        assert done.returncode == 0 and f"sent SIGHUP to {proc.pid}" in done.stdout, done.stdout + done.stderr
        wait_until(lambda: _generation(base) >= 2, "the SIGHUP reloaded", alive=proc)
        assert _generation(base) == 2


def test_reload_cluster_without_a_cluster_says_nothing_was_announced_and_exits_1(
    env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "mcp-providers.toml"
    config.write_text('allow = ["notes", "extra"]\ndeny = ["extra"]\n' + ADMIN)
    with _http(env, config) as (base, _proc):
        config.write_text(ON + ADMIN)
        args = ["--url", base, "--token-env", "RELOAD_TEST_ADMIN_TOKEN", "--cluster"]
        done = run_cli("reload", *args, env=whole_env(env))
        assert done.returncode == 1, done.stdout + done.stderr
        assert "reload applied" in done.stdout  # this server did reload
        assert "problem: not announced: this server has no [cluster]" in done.stdout
        assert "announced to the other replicas" not in done.stdout
        assert _generation(base) == 2
        done = run_cli("reload", "--url", base, "--token-env", "RELOAD_TEST_ADMIN_TOKEN", env=whole_env(env))
        assert done.returncode == 0 and "reload unchanged" in done.stdout, done.stdout + done.stderr


SLOW_IMPORT = """
import os, pathlib, time

from mcp_providers import Content, Resource, ResourceProvider, hookimpl

_folder = pathlib.Path(os.environ["RELOAD_TEST_SLOW_IMPORT"])
(_folder / "importing").write_text("")
while not (_folder / "go").exists():  # the test sends SIGHUP while the server is composing
    time.sleep(0.02)


class Slow(ResourceProvider):
    name = "slow"
    prefixes = ("slow://shelf/",)

    def resources(self):
        return [Resource(uri="slow://shelf/one", name="one")]

    async def read(self, request):
        return Content(text="late but here")


@hookimpl
def register_resource_providers():
    return [Slow()]
"""


def test_a_sighup_while_the_server_is_still_composing_is_one_reload_once_serving(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = Path(env["PYTHONPATH"].split(os.pathsep)[0])
    (root / "slow_import_plugin.py").write_text(SLOW_IMPORT)
    install(root, "slowimport", {"slow": "slow_import_plugin"})
    folder = tmp_path / "hold"
    folder.mkdir()
    config = tmp_path / "mcp-providers.toml"
    config.write_text('allow = ["notes", "slow"]\n')
    log = tmp_path / "serve.log"
    port = free_port()
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [*python(), "-m", "mcp_providers", "serve", "-c", str(config), "--http", f"127.0.0.1:{port}"],
            env={**env, "RELOAD_TEST_SLOW_IMPORT": str(folder)}, stdin=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until((folder / "importing").exists, "the plugin is being imported", alive=proc, log=log, every=0.02)
        proc.send_signal(signal.SIGHUP)  # composing: the plugin is being imported
        (folder / "go").write_text("")

        def reloaded() -> dict[str, Any] | None:
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{base}/readyz", timeout=2) as answer:
                body: dict[str, Any] = json.loads(answer.read())
                return body if body["last_reload"] is not None else None
            return None

        ready = wait_until(reloaded, "the held SIGHUP reloaded (not ended the server)", alive=proc, log=log)
        assert ready["last_reload"]["trigger"] == "SIGHUP" and ready["last_reload"]["outcome"] == "unchanged"
    finally:
        proc.terminate()
        proc.wait(timeout=15)


GUARDED = 'allow = ["notes", "gate"]\n[plugins.gate]\ndeny = ["notes://"]\n'


def _reloaded(base: str, count: int) -> dict[str, Any]:
    """``/readyz`` once ``count`` reloads have ended (``mcp_providers_reload_total`` summed)."""

    def ended() -> bool:
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as answer:
            lines = answer.read().decode().splitlines()
        return sum(float(line.split()[-1]) for line in lines if line.startswith("mcp_providers_reload_total{")) >= count

    wait_until(ended, f"{count} reloads ended")
    with urllib.request.urlopen(f"{base}/readyz", timeout=5) as answer:
        return dict(json.loads(answer.read()))


async def test_a_config_file_caught_empty_mid_write_is_refused_and_the_policy_keeps_denying(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = Path(env["PYTHONPATH"].split(os.pathsep)[0])
    install(root, "gatedist", {"gate": "reload_plugins:policy"})
    config = tmp_path / "mcp-providers.toml"
    config.write_text(GUARDED)
    with _http(env, config) as (base, proc):
        async with Client(f"{base}/mcp", cache=None) as client:
            with pytest.raises(MCPError, match="denied by the reload test policy"):
                await client.read_resource(NOTES_URI)
            config.write_text("")  # an editor writing in place has truncated it, and not yet written
            proc.send_signal(signal.SIGHUP)
            attempt = _reloaded(base, 1)["last_reload"]
            assert attempt["outcome"] == "failed", attempt
            assert attempt["problem_count"] == 1  # the text is in the log (and /status.json), not /readyz
            assert (
                f"the config could not be read: config file {config} is empty (caught mid-write?); "
                "to serve every installed plugin with its defaults, put a comment in it"
            ) in config.with_suffix(".log").read_text()
            with pytest.raises(MCPError, match="denied by the reload test policy"):
                await client.read_resource(NOTES_URI)  # no window with the policy's rules gone
            assert [str(r.uri) for r in (await client.list_resources()).resources] == [NOTES_URI]
            config.write_text("# every installed plugin, with its defaults\n")
            proc.send_signal(signal.SIGHUP)
            attempt = _reloaded(base, 2)["last_reload"]
            assert attempt["outcome"] == "applied", attempt  # a comment is a config: read, not refused
            assert _text(await client.read_resource(NOTES_URI)) == "first"  # the policy's defaults deny nothing


def _text(result: Any) -> str:
    return str(result.contents[0].text)


def test_a_config_path_that_became_a_fifo_is_refused_and_the_server_goes_on_answering(
    env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "mcp-providers.toml"
    config.write_text('allow = ["notes"]\n')
    with _http(env, config) as (base, proc):
        config.unlink()
        os.mkfifo(config)  # reading it waits for a writer that never comes
        try:
            proc.send_signal(signal.SIGHUP)
            attempt = _reloaded(base, 1)["last_reload"]  # /readyz answers: the event loop was not blocked
            assert attempt["outcome"] == "failed"
            assert attempt["problem_count"] == 1  # the text is in the log (and /status.json), not /readyz
            assert (
                f"the config could not be read: config file {config} is not a regular file; pass a TOML file"
            ) in config.with_suffix(".log").read_text()
        finally:
            with contextlib.suppress(OSError):  # a reader stuck on it (the defect) gets an end of file
                os.close(os.open(config, os.O_WRONLY | os.O_NONBLOCK))


def test_watch_sees_a_kubernetes_configmap_update_that_swaps_a_symlink(env: dict[str, str], tmp_path: Path) -> None:
    """A mounted ConfigMap: ``c.toml -> ..data/c.toml``, ``..data -> ..v1``; an update writes ``..v2``
    and renames a new ``..data`` symlink over the old one (the kubelet's atomic writer): the file
    ``c.toml`` itself is never written, created or removed."""
    mount = tmp_path / "config"
    (mount / "..v1").mkdir(parents=True)
    (mount / "..v1" / "c.toml").write_text('allow = ["notes", "extra"]\ndeny = ["extra"]\n')
    os.symlink("..v1", mount / "..data")
    os.symlink("..data/c.toml", mount / "c.toml")
    with _http(env, mount / "c.toml", "--watch") as (base, _proc):
        (mount / "..v2").mkdir()
        (mount / "..v2" / "c.toml").write_text(ON)
        os.symlink("..v2", mount / "..data_tmp")
        os.rename(mount / "..data_tmp", mount / "..data")
        for old in (mount / "..v1").iterdir():
            old.unlink()
        (mount / "..v1").rmdir()
        attempt = _reloaded(base, 1)["last_reload"]
        assert (attempt["trigger"], attempt["outcome"], attempt["changed"]) == (
            "file",
            "applied",
            ["resources", "tools"],
        )


STUCK_HOOK_MODULE = """
import os
import pathlib
import time

from mcp_providers import hookimpl


@hookimpl
def register_resource_providers():
    (pathlib.Path(os.environ["RELOAD_TEST_STUCK"]) / "stuck").write_text("")
    time.sleep(3600)  # never returns while the test runs
    return []
"""


def test_sigterm_ends_a_server_whose_reload_is_stuck_in_a_plugin_hook(env: dict[str, str], tmp_path: Path) -> None:
    root = Path(env["PYTHONPATH"].split(os.pathsep)[0])
    (root / "stuck_hook_plugin.py").write_text(STUCK_HOOK_MODULE)
    install(root, "stuckhook", {"stuck": "stuck_hook_plugin"})
    config = tmp_path / "mcp-providers.toml"
    config.write_text('allow = ["notes"]\n')
    with _http({**env, "RELOAD_TEST_STUCK": str(tmp_path)}, config) as (base, proc):
        config.write_text('allow = ["notes", "stuck"]\n')
        proc.send_signal(signal.SIGHUP)
        wait_until((tmp_path / "stuck").exists, "the reload reached the plugin's hook", alive=proc)
        assert _generation(base) == 1  # the old composition answers meanwhile
        proc.terminate()
        try:
            proc.wait(timeout=15)  # the stuck hook's thread does not hold the exit
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail("SIGTERM did not end the server in 15 s: its shutdown waited for the stuck reload")


def test_sighup_to_the_parent_of_workers_reloads_every_worker(env: dict[str, str], tmp_path: Path) -> None:
    from real_parts import redis_server

    with redis_server() as (redis_url, _):
        cluster = f'\n[cluster]\nredis_url = "{redis_url}"\nkey_prefix = "reload-workers"\n'
        config = tmp_path / "mcp-providers.toml"
        config.write_text('allow = ["notes", "extra"]\ndeny = ["extra"]\n' + cluster)
        with _http(env, config, "--workers", "2", "--stateless") as (_base, parent):
            log = config.with_suffix(".log")
            # ready answers once one worker is: wait for both (the parent's line and each worker's)
            wait_until(lambda: log_count(log, "serving MCP on") >= 3, "both workers serve", alive=parent, log=log)
            config.write_text(ON + cluster)
            parent.send_signal(signal.SIGHUP)  # the pid an operator knows: the parent's
            applied = lambda: log_count(log, "reload (SIGHUP) applied") >= 2  # noqa: E731
            wait_until(applied, "both workers reloaded", alive=parent, log=log)
            assert parent.poll() is None


def test_a_sighup_while_the_workers_start_ends_none_of_them(env: dict[str, str], tmp_path: Path) -> None:
    # The parent passes a SIGHUP on to every worker, also to one still importing (a second or so),
    # before it holds SIGHUP: its default action would end that worker, and the parent with it.
    from real_parts import redis_server

    with redis_server() as (redis_url, _):
        config = tmp_path / "mcp-providers.toml"
        config.write_text(ON + f'\n[cluster]\nredis_url = "{redis_url}"\nkey_prefix = "reload-early"\n')
        log = tmp_path / "serve.log"
        port = free_port()
        with log.open("wb") as stderr:
            parent = subprocess.Popen(
                [*python(), "-m", "mcp_providers", "serve", "-c", str(config), "--http", f"127.0.0.1:{port}",
                 "--workers", "2", "--stateless"],
                env=env, stdin=subprocess.DEVNULL, stderr=stderr,
            )  # fmt: skip
        try:
            wait_until(lambda: log_count(log, "with 2 workers"), "the workers start", alive=parent, log=log, every=0.01)
            for _ in range(10):  # the first second of the workers' start (a bare import takes longer)
                parent.send_signal(signal.SIGHUP)
                time.sleep(0.1)
            # the parent's line and each worker's; the server ending first fails it
            wait_until(lambda: log_count(log, "serving MCP on") >= 3, "both workers serve", alive=parent, log=log)
            assert parent.poll() is None
        finally:
            parent.terminate()
            parent.wait(timeout=30)


def test_reload_url_credentials_are_not_printed(env: dict[str, str]) -> None:
    port = free_port()  # nothing listens there
    url = f"http://ops:hunter2@127.0.0.1:{port}"
    done = run_cli("reload", "--url", url, "--token-env", "RELOAD_TEST_ADMIN_TOKEN", env=whole_env(env))
    assert done.returncode == 2
    assert f"error: cannot reach http://ops:***@127.0.0.1:{port}/admin/reload: ConnectError" in done.stderr
    assert "hunter2" not in done.stdout + done.stderr and TOKEN not in done.stdout + done.stderr


def test_watch_goes_on_after_the_config_folder_is_removed_and_made_again(env: dict[str, str], tmp_path: Path) -> None:
    """``rm -r conf``, then a while later ``mkdir conf`` and the file: the folder watched is gone,
    and the new one's file is seen all the same."""
    folder = tmp_path / "conf"
    folder.mkdir()
    config = folder / "mcp-providers.toml"
    config.write_text('allow = ["notes", "extra"]\ndeny = ["extra"]\n')
    with _http(env, config, "--watch") as (base, _proc):
        for old in folder.iterdir():
            old.unlink()
        folder.rmdir()
        gone = _reloaded(base, 1)["last_reload"]
        assert gone["outcome"] == "failed" and gone["problem_count"] == 1  # the text: log, /status.json
        time.sleep(2)  # the stimulus, not a wait: the folder stays away a while (a quick remake was seen)
        folder.mkdir()
        config.write_text(ON)
        wait_until(lambda: _generation(base) >= 2, "the remade folder's config was reloaded", every=0.1)


HUNG_LIFESPAN_MODULE = """
import contextlib, os, pathlib

import anyio

from mcp_providers import Content, Resource, ResourceProvider, hookimpl


class Hung(ResourceProvider):
    name = "hung-start"
    prefixes = ("hungstart://",)

    def resources(self):
        return [Resource(uri="hungstart://x", name="x", mime_type="text/plain")]

    async def read(self, request):
        return Content(text="x")

    @contextlib.asynccontextmanager
    async def lifespan(self):
        (pathlib.Path(os.environ["HUNG_START_DIR"]) / "starting").write_text("")
        await anyio.Event().wait()  # a connect with no timeout of its own
        yield


@hookimpl
def register_resource_providers():
    return [Hung()]
"""


def test_sigterm_during_a_providers_slow_start_ends_the_server_without_waiting_out_its_bound(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A lifespan still starting held the stop up until the start's bound (60 s): "stopping" was
    logged at once, the exit came 57 s later. The stop now stops waiting for starts."""
    root = Path(env["PYTHONPATH"].split(os.pathsep)[0])
    (root / "hung_start_plugin.py").write_text(HUNG_LIFESPAN_MODULE)
    install(root, "hungstart", {"hungstart": "hung_start_plugin"})
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [*python(), "-m", "mcp_providers", "serve", "--http", f"127.0.0.1:{free_port()}"],
            env={**env, "HUNG_START_DIR": str(tmp_path)}, stdin=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    try:
        wait_until((tmp_path / "starting").exists, "the provider's lifespan is starting", alive=proc, log=log)
        time.sleep(0.5)
        proc.terminate()
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            pytest.fail(f"SIGTERM did not end the server in 20 s:\n{log.read_text()}")
    assert "did not start within" not in log.read_text()
