"""The command's two consoles (stdout and stderr), made on first use, and rich's markup escape."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def escape(text: str) -> str:
    """rich's markup escape, imported when first needed."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


class _LazyConsole:
    """A rich ``Console`` made on first use: ``serve`` over stdio usually prints nothing, and
    importing rich costs start-up time."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr, soft_wrap=True)
        return getattr(self._console, name)


out: Any = _LazyConsole(stderr=False)
err: Any = _LazyConsole(stderr=True)
