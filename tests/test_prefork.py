"""The tests' fork server (``tests/prefork.py``): a launched run behaves as ``python`` would.

Each test runs a small script through the launcher and checks one thing the test that spawns
``mcp_providers`` relies on: exit code and output, argv, working directory, environment and
``sys.path``; stdin to its end; signals forwarded, and the exit by signal reported as such; a
killed launcher taking its child with it; and the fallbacks to a fresh interpreter. That a run went
through the fork server shows in the child: the preloaded SDK is already in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import prefork
import pytest

PROBE = """
import json, os, sys
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "path": sys.path[:3], "env": os.environ.get("PROBE"),
                  "preloaded": "mcp_types" in sys.modules, "ppid": os.getppid(), "stdin": sys.stdin.read(),
                  "name": __name__, "file": __file__, "utf8_mode": sys.flags.utf8_mode}))
print("to stderr", file=sys.stderr)
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
"""


@pytest.fixture(scope="module", autouse=True)
def fork_server() -> None:
    prefork.start()  # started by conftest already in a test run; waited for here
    deadline = time.monotonic() + 60  # a start-up bound, not an assertion
    while not prefork.ready():
        assert time.monotonic() < deadline, "the fork server did not come up"
        time.sleep(0.05)


def _run(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, **kw: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefork.python(), *args], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env=env, **kw)  # type: ignore[call-overload]  # fmt: skip


def _probe(tmp_path: Path) -> Path:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    return script


def test_a_script_gets_its_args_cwd_env_path_stdin_and_exit_code(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    env = dict(os.environ, PROBE="seen", PROBE_EXIT="7", PYTHONPATH=str(extra))
    run = _run(tmp_path, str(_probe(tmp_path)), "a", "b c", env=env, input="all of stdin\n")
    assert run.returncode == 7
    assert run.stderr == "to stderr\n"
    seen = json.loads(run.stdout)
    assert seen["preloaded"] is True  # it went through the fork server
    assert seen["argv"] == [str(tmp_path / "probe.py"), "a", "b c"]
    assert seen["cwd"] == str(tmp_path)
    assert seen["path"][:2] == [str(tmp_path), str(extra)]  # the script's folder, then PYTHONPATH
    assert seen["env"] == "seen" and seen["stdin"] == "all of stdin\n" and seen["name"] == "__main__"
    assert seen["file"] == str(tmp_path / "probe.py")


def test_relative_and_repeated_path_entries_are_made_absolute_once(tmp_path: Path) -> None:
    (tmp_path / "rel").mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(["rel", "rel/", str(tmp_path / "rel")]))
    seen = json.loads(_run(tmp_path, str(_probe(tmp_path)), env=env).stdout)
    assert seen["preloaded"] is True
    assert seen["path"][:3] == [str(tmp_path), str(tmp_path / "rel"), seen["path"][2]]
    assert seen["path"][2] != str(tmp_path / "rel")


def test_a_traceback_shows_the_commands_frames_only(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text("def inner():\n    raise RuntimeError('boom')\ninner()\n")
    run = _run(tmp_path, str(script))
    assert run.returncode == 1
    frames = [line for line in run.stderr.splitlines() if line.lstrip().startswith("File ")]
    assert [f.split(",")[0].strip() for f in frames] == [f'File "{script}"'] * 2, run.stderr
    assert run.stderr.rstrip().endswith("RuntimeError: boom")


def test_a_module_runs_with_m_and_the_working_directory_first_on_the_path(tmp_path: Path) -> None:
    (tmp_path / "probe_module.py").write_text(PROBE)
    run = _run(tmp_path, "-m", "probe_module", "x", env=dict(os.environ, PYTHONPATH=""))
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["preloaded"] is True
    assert seen["argv"] == [str(tmp_path / "probe_module.py"), "x"]
    assert seen["path"][0] == str(tmp_path)


def test_mcp_providers_runs_through_it() -> None:
    run = subprocess.run([*prefork.python(), "-m", "mcp_providers", "--version"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("mcp-providers ")


def test_a_signal_to_the_launcher_reaches_the_child(tmp_path: Path) -> None:
    script = tmp_path / "trap.py"
    script.write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    with subprocess.Popen([*prefork.python(), str(script)], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        proc.terminate()
        assert proc.wait(timeout=30) == 3  # the child's own handler ran and chose the code


@pytest.mark.parametrize("signum", [signal.SIGUSR1, signal.SIGKILL])
def test_a_child_killed_by_a_signal_reads_as_killed_by_it(tmp_path: Path, signum: int) -> None:
    script = tmp_path / "die.py"
    script.write_text(f"import os\nos.kill(os.getpid(), {int(signum)})\n")
    assert _run(tmp_path, str(script)).returncode == -signum


def test_a_killed_launcher_takes_its_child_with_it(tmp_path: Path) -> None:
    script = tmp_path / "linger.py"
    script.write_text("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)\n")
    with subprocess.Popen([*prefork.python(), str(script)], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        assert child != proc.pid  # the premise: the script runs in the fork server's child
        proc.kill()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists()


def test_launchers_that_go_away_mid_handoff_leave_the_fork_server_serving(tmp_path: Path) -> None:
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time\ntime.sleep(30)\n")
    with socket.socket(socket.AF_UNIX) as bare:  # connects and sends nothing
        bare.connect(prefork.python()[-1])
    for delay in range(0, 60, 3):  # killed at every stage of the handoff, in turn
        with subprocess.Popen([*prefork.python(), str(sleeper)]) as proc:
            time.sleep(delay / 1000)
            proc.kill()
    assert prefork.ready()
    seen = json.loads(_run(tmp_path, str(_probe(tmp_path))).stdout)
    assert seen["preloaded"] is True  # still forked by the same server


@pytest.mark.parametrize(
    "why",
    [
        "no fork server at that socket",
        "an interpreter setting differs",
        "arguments other than -m or a script",
        "a pydantic plugin on the path",
        "a path entry that shadows a preloaded module",
        "a sitecustomize on the path",
        "another time zone",
        "another umask",
        "a descriptor passed beyond stdio",
        "no locale in the environment",
    ],
)
def test_what_it_cannot_reproduce_runs_in_a_fresh_interpreter(tmp_path: Path, why: str) -> None:
    command, env, args = prefork.python(), dict(os.environ), [str(_probe(tmp_path))]
    extra: dict[str, object] = {}
    site = tmp_path / "site"
    site.mkdir()
    if why == "no fork server at that socket":
        command[-1] = str(tmp_path / "no-such-socket")
    elif why == "an interpreter setting differs":
        env["PYTHONWARNINGS"] = env.get("PYTHONWARNINGS", "") + ",ignore::UserWarning"
    elif why == "a pydantic plugin on the path":
        info = site / "acme_pydantic-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-pydantic\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[pydantic]\nacme = acme_pydantic:plugin\n")
        env["PYTHONPATH"] = str(site)
    elif why == "a path entry that shadows a preloaded module":
        (site / "json").mkdir()
        (site / "json" / "__init__.py").write_text("from _json import *\nfrom importlib import import_module\n")
        env["PYTHONPATH"] = str(site)
        args = [str(_probe(tmp_path).rename(tmp_path / "plain.py"))]
        (tmp_path / "plain.py").write_text("import sys\nprint(__import__('json').__file__)\n")
    elif why == "a sitecustomize on the path":
        (site / "sitecustomize.py").write_text("import os\nos.environ['PROBE'] = 'customized'\n")
        env["PYTHONPATH"] = str(site)
    elif why == "another time zone":
        env["TZ"] = "Asia/Tokyo"
    elif why == "another umask":
        extra["umask"] = 0o077
    elif why == "a descriptor passed beyond stdio":
        reader, writer = os.pipe()
        extra["pass_fds"] = (writer,)
    elif why == "no locale in the environment":
        env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}  # what the SDKs' clients pass
    else:
        args = ["-X", "utf8", *args]
    try:
        run = subprocess.run([*command, *args], capture_output=True, text=True, timeout=60, env=env, input="in",
                             **extra)  # type: ignore[call-overload]  # fmt: skip
    finally:
        if "pass_fds" in extra:
            os.close(reader)
            os.close(writer)
    if why == "a path entry that shadows a preloaded module":
        assert run.stdout.strip() == str(site / "json" / "__init__.py"), run.stderr  # the shadow won
        return
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["preloaded"] is False  # a fresh interpreter imported nothing ahead
    assert seen["stdin"] == "in" and seen["argv"] == [str(tmp_path / "probe.py")]
    if why == "a sitecustomize on the path":
        assert seen["env"] == "customized"
    if why == "no locale in the environment":
        direct = subprocess.run([sys.executable, str(tmp_path / "probe.py")], capture_output=True, text=True,
                                timeout=60, env=env, input="in")  # fmt: skip
        assert seen["utf8_mode"] == json.loads(direct.stdout)["utf8_mode"] == 1  # the C locale, coerced
