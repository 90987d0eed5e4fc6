"""``mcp-providers serve``, alone or with its config file only (what an MCP client launches), runs
without typer (issue 43): :mod:`mcp_providers.__main__` hands that argv to
:mod:`mcp_providers._cli.stdio`. These tests hold it to the typer command it stands for: the same
lines and exit status for each kind of refusal, each spelling of the config file and Ctrl-C, and
every other argv still goes through typer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from prefork import python

# Each command runs through the fork server (prefork.python(): a real process with its own pipes,
# exit status and forwarded signals, without the SDK's import each time), except where the
# process's own descriptors are the subject (a closed stdin), which needs a fresh interpreter.
FAST = [*python(), "-m", "mcp_providers", "serve"]
"""The command as a client runs it: the fast path."""
FAST_FRESH = [sys.executable, "-m", "mcp_providers", "serve"]
TYPER_MAIN = "import sys; from mcp_providers.cli import main; sys.argv[0] = 'mcp-providers'; main()"
TYPER_FRESH = [sys.executable, "-c", TYPER_MAIN, "serve"]
"""The same argv run by the typer app, as before the fast path (more arguments may follow)."""


def _script(folder: Path, name: str, code: str) -> list[str]:
    """``python SCRIPT`` for ``code`` (the fork server runs scripts and modules, not ``-c``); the
    script's folder is the working folder, first on ``sys.path`` as ``-c`` puts it."""
    path = folder / name
    path.write_text(code)
    return [*python(), str(path)]


def typer(folder: Path) -> list[str]:
    """:data:`TYPER_FRESH` through the fork server (``folder``: the run's working folder)."""
    return [*_script(folder, "typer_main.py", TYPER_MAIN), "serve"]


WHAT_WAS_IMPORTED = """
import json, sys
import mcp_providers._cli.stdio as stdio

def serving(server, wire_out):  # where serve would start answering: say what start-up imported
    found = sorted(m for m in ("typer", "mcp_providers.cli", "mcp_providers._cli.report") if m in sys.modules)
    print(json.dumps({"imported": found, "server": type(server).__name__}), file=sys.stderr)

stdio.serve_over = serving
sys.argv = %r
from mcp_providers.__main__ import main
main()
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    return {**env, **extra}


def _imported(argv: list[str], tmp_path: Path) -> dict[str, object]:
    done = subprocess.run(
        _script(tmp_path, "imported.py", WHAT_WAS_IMPORTED % (argv,)),
        capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen: dict[str, object] = json.loads(done.stderr.strip().splitlines()[-1])
    return seen


def test_a_bare_serve_starts_without_typer_or_the_cli_module(tmp_path: Path) -> None:
    seen = _imported(["mcp-providers", "serve"], tmp_path)
    assert seen["imported"] == []
    assert seen["server"] != "NoneType"


@pytest.mark.parametrize("args", [["-c", "c.toml"], ["--config", "c.toml"], ["--config=c.toml"]])
def test_serve_with_its_config_file_only_starts_without_typer(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text("[server]\n")
    seen = _imported(["mcp-providers", "serve", *args], tmp_path)
    assert seen["imported"] == []


TYPER_AT_EXIT = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps({"typer": "typer" in sys.modules}), file=sys.stderr))
sys.argv = %r
from mcp_providers.__main__ import main
main()
"""

OTHER_ARGS = [["--strict"], ["-c", "c.toml", "--strict"], ["--config="], ["-c", "--strict"], ["-cc.toml"], ["-c"],
              ["--help"], ["-c", ""], ["--http", "127.0.0.1:1"], ["serve"]]  # fmt: skip


@pytest.mark.parametrize("args", OTHER_ARGS)
def test_serve_with_any_other_argument_is_left_to_typer(args: list[str]) -> None:
    """The one place the fast path is chosen (``__main__._stdio_serve``) leaves every other argv to typer."""
    from mcp_providers.__main__ import _stdio_serve

    assert _stdio_serve(["serve", *args]) is None
    assert _stdio_serve(["serve"]) == (None,) and _stdio_serve(["serve", "--config=c.toml"]) == ("c.toml",)


def test_an_argv_left_to_typer_runs_typer(tmp_path: Path) -> None:
    argv = ["mcp-providers", "serve", "--help"]
    done = subprocess.run(
        _script(tmp_path, "at_exit.py", TYPER_AT_EXIT % (argv,)),
        capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert json.loads(done.stderr.strip().splitlines()[-1]) == {"typer": True}, done.stderr


CONFIGS = {  # kind: (config text or None for a missing file, exit status)
    "missing file": (None, 1),
    "not TOML": ("[server\n", 1),
    "unknown key": ("[server]\nno_such_setting = 1\n", 1),
    "unknown plugin": ("[plugins.no_such_plugin]\nx = 1\n", 1),
    "policy not in force (fail closed)": ('[plugins.policy]\nrules = "not a list"\n', 1),
    "plugin rejected, the others served": ('[plugins.servicenow]\ninstances = "not a table"\n', 0),
}


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_a_config_ends_both_paths_alike(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    text, status = CONFIGS[kind]
    if text is not None:
        path.write_text(text)
    ends = []
    for argv in (FAST, typer(tmp_path)):
        done = subprocess.run(
            argv, capture_output=True, text=True, env=_env(MCP_PROVIDERS_CONFIG=str(path)), cwd=tmp_path,
            timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        ends.append((done.returncode, done.stdout, done.stderr))
    assert ends[0] == ends[1]
    code, stdout, stderr = ends[0]
    assert code == status and stdout == "" and "Traceback" not in stderr and stderr.strip(), stderr


@pytest.mark.parametrize("args", [["-c", "./c.toml"], ["--config", "c.toml"], ["--config=sub/../c.toml"]])
def test_each_spelling_of_the_config_file_ends_both_paths_alike(args: list[str], tmp_path: Path) -> None:
    """A config refused for a key of its own: a spelling read as another path would end otherwise
    (an accepted config ends both paths alike in the tests above and below)."""
    text = "[server]\nno_such_setting = 1\n"
    (tmp_path / "sub").mkdir()
    (tmp_path / "c.toml").write_text(text)
    ends = []
    for argv in ([*FAST, *args], [*typer(tmp_path), *args]):
        done = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=120,
                              stdin=subprocess.DEVNULL)  # fmt: skip
        ends.append((done.returncode, done.stdout, done.stderr))
    assert ends[0] == ends[1]
    assert ends[0][0] == 1 and "no_such_setting" in ends[0][2], ends[0][2]
    assert "Traceback" not in ends[0][2]


def test_end_of_input_ends_both_paths_with_status_0(tmp_path: Path) -> None:
    codes = [
        subprocess.run(argv, capture_output=True, env=_env(), cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL)
        for argv in (FAST, typer(tmp_path))
    ]
    assert [(c.returncode, c.stdout) for c in codes] == [(0, b""), (0, b"")], [c.stderr[-500:] for c in codes]


INIT_LINE = (
    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
    + b"\n"
)  # fmt: skip
"""One ``initialize`` request line, as a client's first write."""


def _interrupted(argv: list[str], tmp_path: Path) -> tuple[int, bytes]:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(), cwd=tmp_path)  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INIT_LINE)
        proc.stdin.flush()
        assert b'"result"' in proc.stdout.readline()  # serving
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stderr


def test_ctrl_c_ends_both_paths_alike(tmp_path: Path) -> None:
    # fresh interpreters: a signal is about the process itself (through the fork server's launcher,
    # the typer path was sometimes seen ended by the signal, -2, rather than exiting 130)
    fast, by_typer = _interrupted(FAST_FRESH, tmp_path), _interrupted(TYPER_FRESH, tmp_path)
    assert fast == by_typer
    assert fast[0] == 130


def _answer_unread(argv: list[str], tmp_path: Path) -> tuple[int, bytes]:
    """``serve`` whose reader is gone before the answer: it writes to a broken pipe."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(), cwd=tmp_path)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdout.close()
    try:
        _, stderr = proc.communicate(INIT_LINE, timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stderr


def test_a_reader_gone_ends_both_paths_alike(tmp_path: Path) -> None:
    fast, by_typer = _answer_unread(FAST, tmp_path), _answer_unread(typer(tmp_path), tmp_path)
    assert fast == by_typer
    assert fast[0] == 0 and b"Traceback" not in fast[1], fast[1]  # the loop ends quietly: nobody is left to answer


def test_a_closed_stdin_ends_both_paths_with_a_message_not_a_traceback(tmp_path: Path) -> None:
    """Tester eighteen: with descriptor 0 closed, both paths ended with the event loop's
    ``OSError: [Errno 22]`` traceback (moving fd 1 aside had taken descriptor 0)."""
    ends = []
    for argv in (FAST_FRESH, TYPER_FRESH):  # descriptor 0 closed: the fork server's launcher needs it
        done = subprocess.run(
            argv, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=120,
            preexec_fn=lambda: os.close(0),  # the child's own descriptor, before exec
        )  # fmt: skip
        ends.append((done.returncode, done.stdout, done.stderr))
    assert ends[0] == ends[1]
    code, stdout, stderr = ends[0]
    assert code == 1 and stdout == "" and "Traceback" not in stderr, stderr
    assert "stdin is closed" in stderr and "--http HOST:PORT" in stderr
