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

A pause must not end with what it made in the young generation: the collector counts allocations
while paused, so the first allocation after it runs a young pass over everything made meanwhile
(about 95,000 objects after the CLI's import: a tenth of the time to ready, measured on 6 December
2026), and the survivors are walked again by the next middle pass. So the CLI's import ends its
pause by moving what it made to the oldest generation without walking it (:func:`paused` with
``promote``), and ``serve`` freezes its start-up heap before the collector runs again.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused(*, promote: bool = False) -> Iterator[None]:
    """Run the body with the cyclic collector disabled, then put back the state found (so a pause
    inside a pause, or in a process that disabled the collector itself, leaves it disabled).

    :param promote: when the body ends, move every object the collector tracks to the oldest
        generation without walking it (:func:`gc.freeze` then :func:`gc.unfreeze`), so no young
        pass walks what the body made; skipped when the process has frozen objects of its own
        (unfreezing would hand them back to the collector).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if promote and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
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
