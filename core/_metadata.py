"""Installed-package metadata that survives broken metadata on ``sys.path``.

One broken ``*.dist-info`` folder (an empty ``.dist-info``, a ``METADATA`` without ``Name``, an
``entry_points.txt`` that does not parse or is not UTF-8) makes ``importlib.metadata.entry_points()``
raise for everyone: pydantic's plugin loader calls it when the first model class is built, so every
command, ``--help`` included, would end in a traceback. Here the fast path is tried first (no cost
when nothing is broken); when it raises, distributions are read one at a time, each broken one
skipped with one warning naming its path.
"""

from __future__ import annotations

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

    :param distributions: ``importlib.metadata.distributions()`` (or the backport's).
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


def guard_pydantic_plugins() -> None:
    """Load pydantic's plugins now, so a broken distribution cannot crash the first model class.

    pydantic (``pydantic.plugin._loader.get_plugins``) reads ``entry_points(group="pydantic")`` once
    and caches what it found; when that raises on broken metadata the cache is left empty, so later
    model classes build, and the plugins of the readable distributions are loaded here instead.
    ``PYDANTIC_DISABLE_PLUGINS`` (pydantic's documented switch) keeps working as before.
    """
    try:
        from pydantic.plugin import _loader
    except ImportError:  # a pydantic without plugins
        return
    try:
        _loader.get_plugins()
        return
    except Exception:
        pass
    import importlib.metadata
    import os

    disabled = (os.getenv("PYDANTIC_DISABLE_PLUGINS") or "").split(",")
    plugins: dict[str, Any] = {}
    for entry_point in usable(importlib.metadata.distributions(), "pydantic"):
        if entry_point.name in disabled:
            continue
        try:
            plugins.setdefault(entry_point.value, entry_point.load())
        except (ImportError, AttributeError) as exc:  # what pydantic itself skips
            log.warning("pydantic plugin %s could not be loaded: %s", entry_point.name, exc)
    if isinstance(getattr(_loader, "_plugins", None), dict):
        _loader._plugins = plugins


guard_pydantic_plugins()  # on import: ``mcp_providers`` imports this module before any model class
