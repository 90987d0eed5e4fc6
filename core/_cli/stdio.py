"""``serve`` over stdio, and the command a client launches run without typer.

``mcp-providers serve``, alone or with its config file only (``-c FILE``, ``--config FILE``,
``--config=FILE``), comes here from :mod:`mcp_providers.__main__` instead of building the typer
app: importing typer and dispatching through it was about 17 ms of CPU before the first answer
(issue 43). Everything else, ``serve --help`` and every other option included, goes through
:mod:`mcp_providers.cli`, which runs the same functions below. So the two paths print the same
lines and end with the same exit codes: 0 when serving ends (a client gone included), 1 for a
refusal (bad config, a composition that refuses to serve), 130 for Ctrl-C, and 1 for a broken
pipe that escapes serving, as typer ends one.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO

from mcp_providers import _gc
from mcp_providers._cli import logs
from mcp_providers._cli.console import err, escape

with _gc.paused(promote=True):  # the MCP SDK and the serving core: long-lived objects almost only (mcp_providers._gc)
    import anyio

    from mcp_providers._cli.serving import reloads, server_of, traces
    from mcp_providers._serve.composition import Composition, compose
    from mcp_providers._serve.reload import hold_sighup
    from mcp_providers._serve.transport.stdio_fds import guarded_stdout
    from mcp_providers._serve.transport.stdio_loop import serve_sdk_stdio, serve_stdio
    from mcp_providers.config import Config, load_config
    from mcp_providers.errors import CompositionError, ConfigError

STDIO_ENV = "MCP_PROVIDERS_STDIO"
"""Set to ``sdk`` to serve stdio with the SDK's transport (the fallback of
:func:`~mcp_providers._serve.transport.stdio_loop.serve_stdio`) even where pipes apply."""


def refuse() -> NoReturn:
    """End the command with exit status 1, its reason already printed (``SystemExit``: typer lets
    it through unchanged, so a command run by typer and this module's :func:`main` end alike)."""
    raise SystemExit(1)


def load(config_path: Path | None, plugin_set: str | None = None) -> Config:
    """The config, or exit 1 with what is wrong with it."""
    try:
        return load_config(config_path, plugin_set=plugin_set)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", markup=True, highlight=False)
        refuse()


def compose_checked(config: Config, strict: bool) -> Composition:
    """The composition, with every process-wide side-effect guard installed when it starts: the
    CLI owns its process (an embedder chooses, see :mod:`mcp_providers.embedding`); exit 1 when
    the config or (under ``--strict``) the composition is refused."""
    try:
        composition = compose(config, strict=strict)
        composition.runtime.process_guards = True
        return composition
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        refuse()
    except CompositionError as exc:
        err.print("[red]refusing to start (--strict):[/red]", highlight=False)
        for line in exc.problems:
            err.print(f"  {line}", highlight=False, markup=False)
        refuse()


def logged(loaded: Config, level: str | None, fmt: str | None) -> Config:
    """``loaded``, once the log follows its ``[server] log_level``/``log_format`` where the command
    line named none (:mod:`mcp_providers._cli.logs`)."""
    server = loaded.server
    logs.configure(level or server.log_level or "warning", fmt or server.log_format or "text")
    return loaded


def started(
    loaded: Config, config: Path | None, plugin_set: str | None, strict: bool, watched: str | None
) -> tuple[Composition, Any, Any]:
    """The composition, its server and its reloader, made with the cyclic collector paused; what
    they hold is then frozen, never traversed again (:mod:`mcp_providers._gc`)."""
    with _gc.paused():
        composition = compose_checked(loaded, strict)
        composition.runtime.owns_process = True  # serve's: a provider that cannot be stopped never holds it
        server = server_of(composition, strict)
        reloader = reloads(composition, config, plugin_set, watched)
        _gc.settle()  # before the collector runs again: its next pass would walk all of it first
    return composition, server, reloader


def serve_over(server: Any, wire_out: int) -> None:
    """Serve ``server`` over stdin and ``wire_out`` (the original stdout, moved aside)."""
    # The SDK's thread-based transport, for comparison (serve_stdio's own fallback where pipes do not apply).
    serving = serve_sdk_stdio if os.environ.get(STDIO_ENV) == "sdk" else serve_stdio
    anyio.run(functools.partial(serving, server, stdout_fd=wire_out))


def run(
    config: Path | None,
    plugin_set: str | None,
    strict: bool,
    watched: str | None,
    log_level: str | None,
    log_format: str | None,
    serving: Callable[[Any, int], None],
) -> None:
    """``serve``'s stdio branch, once SIGHUP is held and the options are checked; ``serving`` is
    :func:`serve_over` (the CLI passes its own name for it, which tests replace)."""
    if not _open(0):  # before fd 1 is moved aside: its copy would take descriptor 0 and be read as the client
        err.print(
            "[red]error:[/red] stdin is closed: serve over stdio reads its client's messages from stdin; start it "
            "from an MCP client (which gives it a pipe), or serve HTTP with --http HOST:PORT",
            highlight=False,
        )
        refuse()
    # fd 1 is the wire: move it aside before any plugin is imported (a plugin, or a child process
    # it starts, may write to fd 1 at import time).
    with guarded_stdout() as wire_out, traces():
        loaded = logged(load(config, plugin_set), log_level, log_format)
        _, server, _ = started(loaded, config, plugin_set, strict, watched)
        serving(server, wire_out)


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def main(config: str | None = None) -> None:
    """``mcp-providers serve [-c config]`` (``config`` as given on the command line: a path, as typer
    converts it), ended as typer ends a command (see the module docstring): Ctrl-C exits 130, end
    of input while reading a prompt says ``Aborted!`` and exits 1, a broken pipe exits 1 quietly;
    any other exception is raised with its traceback."""
    try:
        hold_sighup()  # first: composing takes seconds, and an unheld SIGHUP would end the process
        logs.configure("warning", "text")  # the config, once read, may say more
        run(Path(config) if config is not None else None, None, False, None, None, None, serve_over)
    except KeyboardInterrupt:
        sys.exit(130)
    except EOFError:
        sys.stderr.write("\nAborted!\n")
        sys.exit(1)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        sys.stdout, sys.stderr = _Pacified(sys.stdout), _Pacified(sys.stderr)
        sys.exit(1)


class _Pacified:
    """A stream whose ``flush`` ignores a broken pipe, as click leaves stdout and stderr after one
    (so the interpreter's last flush prints no second error)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
