"""Other packages' private names the core uses are checked at start-up, loudly (issue 24 item 22,
issue 43: one table for the SDK's, uvicorn's, pluggy's, pydantic's and CPython's).

Each seam of :data:`mcp_providers._serve.seams.SEAMS` is broken here the way a release could
break it (renamed, removed, replaced); the check must name it, composing a server must refuse (a
``core`` seam) or ``serve --http`` must (an ``http`` one), and ``serve`` must exit naming it.
``.ci/run`` runs this file against the newest SDK 2.x to report drift:
:func:`test_the_installed_packages_have_every_seam` is the one that then fails.
"""

from __future__ import annotations

import asyncio.events
import importlib.metadata
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pluggy
import pytest

from mcp_providers._serve import seams
from mcp_providers.errors import CompositionError
from mcp_providers.testing import compose


@pytest.fixture(autouse=True)
def _fresh_check() -> Iterator[None]:
    seams._checked.cache_clear()
    yield
    seams._checked.cache_clear()


def _rename_after_init(cls: type, old: str, new: str) -> Callable[[pytest.MonkeyPatch], None]:
    def breaker(monkeypatch: pytest.MonkeyPatch) -> None:
        init = cls.__init__  # type: ignore[misc]

        def renamed(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            setattr(self, new, self.__dict__.pop(old))

        monkeypatch.setattr(cls, "__init__", renamed)

    return breaker


class _MarkedElsewhere(pluggy.HookimplMarker):
    """A pluggy that keeps a hookimpl's options under another attribute name."""

    def __call__(self, function: Any = None, **kwargs: Any) -> Any:
        marked = super().__call__(function, **kwargs)
        if function is not None:
            setattr(marked, f"_{self.project_name}_opts", vars(marked).pop(f"{self.project_name}_impl"))
        return marked


class _FolderElsewhere(importlib.metadata.PathDistribution):
    """A standard library whose distributions keep their folder under another name (all else works)."""

    def __init__(self, path: Any) -> None:
        self._folder = path

    def read_text(self, filename: str) -> str | None:
        try:
            return str(self._folder.joinpath(filename).read_text(encoding="utf-8"))
        except (OSError, KeyError):
            return None

    def locate_file(self, path: Any) -> Any:
        return self._folder.parent / path

    @property
    def _normalized_name(self) -> str:
        return re.sub(r"[-_.]+", "_", self.name).lower()


def _mark_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pluggy, "HookimplMarker", _MarkedElsewhere)


def _breakers() -> dict[str, Callable[[pytest.MonkeyPatch], None]]:
    import _posixsubprocess

    import mcp.server._otel as otel
    import mcp.server._streamable_http_modern as modern
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http import StreamableHTTPServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from pydantic.plugin import _loader
    from uvicorn.protocols.http.h11_impl import H11Protocol

    return {
        "mcp.server.session.ServerSession._connection": _rename_after_init(ServerSession, "_connection", "_conn"),
        "mcp.server._otel.OpenTelemetryMiddleware": lambda mp: mp.setattr(
            otel, "OpenTelemetryMiddleware", type("Renamed", (), {})
        ),
        "mcp.server.streamable_http_manager.StreamableHTTPSessionManager._lifespan_state": _rename_after_init(
            StreamableHTTPSessionManager, "_lifespan_state", "_state"
        ),
        "mcp.server.streamable_http_manager.StreamableHTTPSessionManager._admit_session": lambda mp: mp.delattr(
            StreamableHTTPSessionManager, "_admit_session"
        ),
        "mcp.server.streamable_http.StreamableHTTPServerTransport._event_store": _rename_after_init(
            StreamableHTTPServerTransport, "_event_store", "_events"
        ),
        "mcp.server._streamable_http_modern.handle_modern_request": lambda mp: mp.delattr(
            modern, "handle_modern_request"
        ),
        "pluggy.HookimplMarker/HookspecMarker (<project>_impl, <project>_spec)": _mark_elsewhere,
        "pydantic.plugin._loader._plugins": lambda mp: mp.delattr(_loader, "_plugins"),
        "_posixsubprocess.fork_exec": lambda mp: mp.delattr(_posixsubprocess, "fork_exec"),
        "asyncio.events.Handle._run": lambda mp: mp.delattr(asyncio.events.Handle, "_run"),
        "importlib.metadata.PathDistribution._path": lambda mp: mp.setattr(
            importlib.metadata, "PathDistribution", _FolderElsewhere
        ),
        "importlib.metadata.MetadataPathFinder.invalidate_caches (undocumented)": lambda mp: mp.delattr(
            importlib.metadata.MetadataPathFinder, "invalidate_caches"
        ),
        "uvicorn.protocols.http.h11_impl.H11Protocol (conn, client, loop, transport, on_response_complete)": (
            _rename_after_init(H11Protocol, "conn", "h11_connection")
        ),
    }  # fmt: skip


def test_the_installed_packages_have_every_seam() -> None:
    assert [s.name for s in seams.missing_seams()] == []
    seams.check_seams()  # and so serving starts
    seams.check_seams("http")


def test_the_table_holds_at_most_thirteen_private_names_each_from_a_tested_package() -> None:
    assert len(seams.SEAMS) <= 13  # thirteenth: asyncio's Handle._run (tester thirty-two F1)
    assert len({s.name for s in seams.SEAMS}) == len(seams.SEAMS)
    assert {s.package for s in seams.SEAMS} <= set(seams.TESTED)


def test_every_seam_has_a_breaker_here() -> None:
    assert {s.name for s in seams.SEAMS} == set(_breakers())


@pytest.mark.parametrize("seam", seams.SEAMS, ids=[s.name for s in seams.SEAMS])
def test_a_missing_seam_is_named_by_the_check_and_composing_refuses(
    monkeypatch: pytest.MonkeyPatch, seam: seams.Seam
) -> None:
    _breakers()[seam.name](monkeypatch)
    assert [s.name for s in seams.missing_seams()] == [seam.name]
    with pytest.raises(CompositionError) as refused:
        seams.check_seams(seam.area)
    assert refused.value.problems[0].startswith("installed packages lack private names this server needs")
    (line,) = refused.value.problems[1:]
    assert seam.name in line
    assert f"tested {seam.package}{seams.TESTED[seam.package]}" in line
    seams._checked.cache_clear()
    other = "http" if seam.area == "core" else "core"
    seams.check_seams(other)  # the other area's check does not look at it
    if seam.area == "core":
        with pytest.raises(CompositionError, match=re.escape(seam.name)):
            compose({}).server  # noqa: B018
    else:
        assert compose({}).server is not None  # a stdio server never needs uvicorn


BREAK_ADMIT = (
    "import sys, mcp.server.streamable_http_manager as m\n"
    "del m.StreamableHTTPSessionManager._admit_session\n"
    "from mcp_providers.cli import main\n"
    "sys.argv = ['mcp-providers', *sys.argv[1:]]\n"
    "main()\n"
)


BREAK_H11 = (
    "import sys, uvicorn.protocols.http.h11_impl as h\n"
    "del h.H11Protocol.on_response_complete\n"
    "from mcp_providers.cli import main\n"
    "sys.argv = ['mcp-providers', *sys.argv[1:]]\n"
    "main()\n"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("breaker", "args", "named"),
    [
        (BREAK_ADMIT, ["serve"], "StreamableHTTPSessionManager._admit_session"),
        (BREAK_ADMIT, ["serve", "--http", "127.0.0.1:{port}"], "StreamableHTTPSessionManager._admit_session"),
        (BREAK_H11, ["serve", "--http", "127.0.0.1:{port}"], "uvicorn.protocols.http.h11_impl.H11Protocol"),
    ],
    ids=["stdio", "http", "http-uvicorn"],
)
def test_serve_exits_naming_the_missing_seam(breaker: str, args: list[str], named: str) -> None:
    from serve_support import free_port

    args = [a.format(port=free_port()) for a in args]
    done = subprocess.run([sys.executable, "-c", breaker, *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert named in done.stderr
    assert "serving MCP on" not in done.stderr  # refused before it listened
    assert "Traceback" not in done.stderr
