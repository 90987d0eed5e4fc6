"""The ``mcp-providers`` CLI run in this process, for tests of what a command prints and its exit code.

A ``python -m mcp_providers ...`` subprocess costs 2 to 3 s of CPU before the command starts (the
MCP SDK's and pydantic's models are built at import); the same ``check`` in process costs a few
hundredths once the modules are loaded. :func:`run_cli` answers like ``subprocess.run`` would
(a :class:`subprocess.CompletedProcess` with ``returncode``, ``stdout`` and ``stderr``), with what
a fresh process would show on stderr kept there too:

- an exception that escapes the command is written to stderr as the traceback Python prints, and
  the exit status is 1, so ``"Traceback" not in stderr`` still fails when a command crashes;
- log records of WARNING and above go to stderr (Python's last-resort handler in a fresh process);
- warnings are printed to stderr instead of raised (pytest's ``filterwarnings = error`` is for the
  test code, not for what a process would print).

For ``check`` and the other commands that only read and print, and for ``serve`` arguments that
are refused before anything is served (with :func:`no_serving`, so a refusal that broke fails
instead of serving). The SIGHUP handler, the root logger's handlers and the loggers' levels that
``serve`` sets are put back after the call. What depends on the process stays a subprocess in its
own tests: serving (fds 0 and 1, signals), ``plugins --json`` (it writes the JSON to fd 1 with fd 1
moved aside), imports of distributions put on ``PYTHONPATH`` and anything that prints at import
time.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import subprocess
import sys
import traceback
import warnings
from collections.abc import Mapping

import pytest
from typer.testing import CliRunner


class _StderrNow(logging.Handler):
    """Writes to whatever ``sys.stderr`` is when a record arrives (the runner's capture)."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(self.format(record) + "\n")


def whole_env(env: Mapping[str, str]) -> dict[str, str | None]:
    """``env`` given whole, as ``subprocess.run(env=...)`` takes it, as :func:`run_cli`'s changes:
    every variable of this process that ``env`` lacks is unset for the call."""
    return {**dict.fromkeys(k for k in os.environ if k not in env), **env}


def _levels() -> dict[logging.Logger, int]:
    loggers = [logging.getLogger(), *(logging.getLogger(name) for name in logging.root.manager.loggerDict)]
    return {logger: logger.level for logger in loggers}


def run_cli(
    *args: str, env: Mapping[str, str | None] | None = None, input: str = ""
) -> subprocess.CompletedProcess[str]:
    """``mcp-providers ARGS...`` in this process: ``env`` changes the environment for the call
    (a value of None unsets the variable), ``input`` is stdin."""
    from mcp_providers.cli import app

    handler = _StderrNow(logging.WARNING)
    root = logging.getLogger()
    handlers = list(root.handlers)
    levels = _levels()
    sighup = signal.getsignal(signal.SIGHUP) if hasattr(signal, "SIGHUP") else None
    frozen = gc.get_freeze_count()
    root.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            result = CliRunner().invoke(app, list(args), env=dict(env or {}), input=input, catch_exceptions=True)
    finally:
        root.handlers[:] = handlers  # serve's logging.basicConfig adds one when there is none
        for logger, level in levels.items():  # serve raises mcp_providers.reload to INFO
            logger.setLevel(level)
        if sighup is not None:
            signal.signal(signal.SIGHUP, sighup)  # serve holds SIGHUP for a reload
        if not frozen:
            gc.unfreeze()  # serve freezes its start-up heap (mcp_providers._gc): this process's stays collectable
    stderr = result.stderr
    stderr += "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, None) for w in caught)
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
        code = 1
    return subprocess.CompletedProcess(["mcp-providers", *args], code, result.stdout, stderr)


SERVED = 99
"""The exit status of a ``serve`` that :func:`no_serving` stopped where it would start serving: no
status a refusal has (1 or 2), so a refusal that printed its message and served anyway fails."""


def no_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``serve`` exit :data:`SERVED` where it would start serving (stdio, HTTP or workers),
    for tests of what it must refuse before that: a refusal that broke fails the test, not hang it."""

    def refuse(*args: object, **kwargs: object) -> None:
        sys.stderr.write("serve went on to serve: it did not refuse\n")
        raise SystemExit(SERVED)

    for name in ("serve_http", "_serve_stdio", "start_workers"):
        monkeypatch.setattr(f"mcp_providers.cli.{name}", refuse)
