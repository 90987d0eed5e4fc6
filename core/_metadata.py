"""Installed-package metadata that survives broken metadata on ``sys.path``.

One broken ``*.dist-info`` folder (an empty ``.dist-info``, a ``METADATA`` without ``Name``, an
``entry_points.txt`` that does not parse or is not UTF-8) makes ``importlib.metadata.entry_points()``
raise for everyone: pydantic's plugin loader calls it when the first model class is built, so every
command, ``--help`` included, would end in a traceback. Here the fast path is tried first (no cost
when nothing is broken); when it raises, distributions are read one at a time, each broken one
skipped with one warning naming its path. ``import mcp_providers`` touches pydantic's loader only
when the metadata is broken (:func:`repaired_pydantic_plugins`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any

log = logging.getLogger("mcp_providers.metadata")

_warned: set[str] = set()


def _where(dist: Any) -> str:
    return str(getattr(dist, "_path", None) or dist)


def _warn(where: str, exc: BaseException) -> None:
    if where in _warned:
        return
    _warned.add(where)
    text = " ".join(str(exc).split()) or type(exc).__name__
    log.warning("skipping broken package metadata at %s (%s); reinstall or remove that folder", where, text)


def usable(distributions: Iterable[Any], group: str) -> Iterator[Any]:
    """The entry points of ``group`` from each distribution whose metadata reads, the first of
    each name only (as ``importlib.metadata`` does); each broken one is warned about once.

    :param distributions: ``importlib.metadata.distributions()``.
    :param group: an entry-point group, e.g. ``mcp_providers`` or ``pydantic``.
    """
    seen: set[str] = set()
    for dist in distributions:
        try:
            name = dist.metadata["Name"]
            if not name:
                raise ValueError("its METADATA has no Name")
            key = re.sub(r"[-_.]+", "-", name).lower()  # PEP 503, as importlib.metadata compares
            if key in seen:
                continue
            found = list(dist.entry_points.select(group=group))
        except Exception as exc:
            _warn(_where(dist), exc)
            continue
        seen.add(key)
        yield from found


def forget_installed() -> None:
    """Make the next read of installed distributions see every one installed, upgraded or removed
    since the last read, however soon after it (a reload).

    ``importlib.metadata`` keeps each ``sys.path`` folder's listing under the folder's mtime, which
    two changes within one clock tick share. Python 3.13's ``importlib.invalidate_caches()`` drops
    that listing too; 3.11's and 3.12's do not, so it is dropped here as well (their
    ``MetadataPathFinder.invalidate_caches`` is an instance method, 3.13's a classmethod: called on
    an instance, it works on each).
    """
    importlib.invalidate_caches()  # new files on sys.path: the path finders look again
    importlib.metadata.MetadataPathFinder().invalidate_caches()


def repaired_pydantic_plugins() -> bool:
    """After a model class failed to build: when package metadata is broken, hand pydantic the
    plugins of the readable distributions and say so; otherwise change nothing.

    pydantic (``pydantic.plugin._loader.get_plugins``) reads ``entry_points(group="pydantic")`` once,
    at the first model class, and caches what it found; when that raises on broken metadata the
    cache is left empty and that first class fails. ``import mcp_providers`` then calls this and
    imports again: only then, with the metadata broken, is pydantic's loader touched (its private
    cache filled), never on an ordinary import. ``PYDANTIC_DISABLE_PLUGINS`` (pydantic's documented
    switch) keeps working as before.

    :returns: ``True`` when the metadata was broken and the plugins are loaded (import again);
        ``False`` when the metadata reads, so the failure was something else (raise it).
    """
    import os

    try:
        importlib.metadata.entry_points(group="pydantic")
        return False
    except Exception:
        pass
    try:
        from pydantic.plugin import _loader
    except ImportError:  # a pydantic without plugins: nothing to repair
        return False
    disabled = (os.getenv("PYDANTIC_DISABLE_PLUGINS") or "").split(",")
    plugins: dict[str, Any] = {}
    for entry_point in usable(importlib.metadata.distributions(), "pydantic"):
        if entry_point.name in disabled:
            continue
        try:
            plugins.setdefault(entry_point.value, entry_point.load())
        except (ImportError, AttributeError) as exc:  # what pydantic itself skips
            log.warning("pydantic plugin %s could not be loaded: %s", entry_point.name, exc)
    if not isinstance(getattr(_loader, "_plugins", None), dict):
        return False  # a loader this repair does not know: let the original failure show
    _loader._plugins = plugins
    return True
