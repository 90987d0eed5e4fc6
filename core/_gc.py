"""The cyclic garbage collector, paused while a process starts.

Start-up (the MCP SDK's 600-odd pydantic models, the core's, the plugins' modules, then composing)
makes some 100,000 objects that live as long as the process and almost no cyclic garbage. The
collector still passes over that growing heap hundreds of times (226 young and 2 full passes on
``serve``'s path, measured on 2 December 2026) and finds about 1,600 unreachable objects, under a
megabyte; those passes were about a tenth of the time to ready (``python -m benchmarks --only
startup``). Reference counting frees everything else as usual while the collector is paused.

So the CLI's import (the SDK and the serving core) and ``serve``'s composition run with it paused
(:func:`paused`); ``import mcp_providers`` does not (a library leaves its host's collector
alone). ``serve`` then moves what start-up made into the permanent generation (:func:`settle`,
:func:`gc.freeze`): the first passes after start-up would otherwise walk all of it, and later
full passes walk only what serving allocates. A reload gives it back
(:func:`thaw`): frozen objects are never collected, and the assembly a reload replaces holds
cycles.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Run the body with the cyclic collector disabled, then put back the state found (so a pause
    inside a pause, or in a process that disabled the collector itself, leaves it disabled)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def settle() -> None:
    """End of ``serve``'s start-up: every object alive now is kept and never traversed again
    (:func:`gc.freeze`); the cyclic garbage start-up left, if any, is kept with it."""
    gc.freeze()


def thaw() -> None:
    """A reload begins: what :func:`settle` froze goes back to the oldest generation, so what the
    reload replaces can be collected (:func:`gc.unfreeze`); nothing is frozen again."""
    gc.unfreeze()
