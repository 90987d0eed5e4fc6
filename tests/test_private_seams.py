"""The SDK's private names the core uses are checked at start-up, loudly (issue 24 item 22).

Each seam of :data:`mcp_providers._serve.seams.SEAMS` is broken here the way an SDK release could
break it (renamed, removed, replaced); the check must name it, composing a server must refuse, and
``serve`` must exit naming it. ``.ci/run`` runs this file against the newest SDK 2.x to report
drift: :func:`test_the_installed_sdk_has_every_seam` is the one that then fails.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

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


def _breakers() -> dict[str, Callable[[pytest.MonkeyPatch], None]]:
    import mcp.server._otel as otel
    import mcp.server._streamable_http_modern as modern
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http import StreamableHTTPServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    class OtherStack(contextlib.AsyncExitStack):
        def __init__(self) -> None:
            super().__init__()
            self._callbacks = self.__dict__.pop("_exit_callbacks")

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
        "contextlib.AsyncExitStack._exit_callbacks": lambda mp: mp.setattr(contextlib, "AsyncExitStack", OtherStack),
    }  # fmt: skip


def test_the_installed_sdk_has_every_seam() -> None:
    assert [s.name for s in seams.missing_seams()] == []
    seams.check_seams()  # and so serving starts


def test_every_seam_has_a_breaker_here() -> None:
    assert {s.name for s in seams.SEAMS} == set(_breakers())


@pytest.mark.parametrize("name", [s.name for s in seams.SEAMS])
def test_a_missing_seam_is_named_by_the_check_and_composing_refuses(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    _breakers()[name](monkeypatch)
    assert [s.name for s in seams.missing_seams()] == [name]
    with pytest.raises(CompositionError) as refused:
        seams.check_seams()
    assert any(name in line for line in refused.value.problems)
    assert "mcp>=2.3,<2.4" in refused.value.problems[0]
    seams._checked.cache_clear()
    with pytest.raises(CompositionError, match=name.replace(".", r"\.")):
        compose({}).server  # noqa: B018


BREAK_ADMIT = (
    "import sys, mcp.server.streamable_http_manager as m\n"
    "del m.StreamableHTTPSessionManager._admit_session\n"
    "from mcp_providers.cli import main\n"
    "sys.argv = ['mcp-providers', *sys.argv[1:]]\n"
    "main()\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("args", [["serve"], ["serve", "--http", "127.0.0.1:{port}"]], ids=["stdio", "http"])
def test_serve_exits_naming_the_missing_seam(args: list[str]) -> None:
    from serve_support import free_port

    args = [a.format(port=free_port()) for a in args]
    done = subprocess.run([sys.executable, "-c", BREAK_ADMIT, *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert "StreamableHTTPSessionManager._admit_session" in done.stderr
    assert "Traceback" not in done.stderr
