"""A plugin's own code, run so that what goes wrong stays its own: its output sent to stderr (never
a stdio MCP stream), its failure told in one line, an interrupt re-raised, and its entry point
loaded only when made for this core."""

from __future__ import annotations

import contextlib
import importlib.metadata
import sys
from collections.abc import Callable, Iterator

from mcp_providers._host.compat import plugin_core_problem


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    # A plugin's print() must never reach a stdio MCP stream.
    with contextlib.redirect_stdout(sys.stderr):
        yield


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def reraise_interrupt(exc: BaseException) -> None:
    """The operator's Ctrl-C stops start-up; anything else a plugin raises is that plugin's failure."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc


class MadeForAnotherCore(Exception):
    """A plugin's distribution requires a core version other than the running one (the message
    names both); raised instead of importing it."""


def guarded_load(ep: importlib.metadata.EntryPoint) -> Callable[[], object]:
    """How to load ``ep``: the one place an entry point is imported, after its distribution's
    requirement on the core is checked (:func:`~mcp_providers._host.compat.plugin_core_problem`).

    :raises MadeForAnotherCore: the core is outside that requirement; nothing was imported.
    """

    def load() -> object:
        problem = plugin_core_problem(ep.dist) if ep.dist is not None else None
        if problem is not None:
            raise MadeForAnotherCore(problem)
        return ep.load()

    return load
