"""Saved references to the functions the process-wide guards replaced (tester twenty-four F2).

A module imported before :func:`.levels.install` may hold an original in a name of its own:
``multiprocessing.connection`` binds ``_write = os.write`` and ``Connection._send(buf,
write=_write)`` keeps it as a default argument, so bytes written through it reach a socket
unjudged. After installing, :func:`redirect_saved` finds every holder of an original
(``gc.get_referrers``, one walk of the heap for all of them) and puts the guard there too:

- a module's globals and a Python class's attributes;
- a function's default arguments (``__defaults__``, ``__kwdefaults__``) and closure cells;
- a set that lists the original (``os.supports_dir_fd`` and its kind: feature tests such as
  ``os.unlink in os.supports_dir_fd``) gets the guard added beside it.

Left alone: the guards' own layers (each calls the one below it), this package's modules (which
keep originals on purpose), types implemented in C (immutable), and other containers (lists,
plain dicts, ``functools.partial``), which :mod:`gc` cannot tie to an owner safely.
"""

from __future__ import annotations

import gc
import sys
import types
from typing import Any

_OURS = "mcp_providers._sideeffects"


def is_guard(value: Any) -> bool:
    """Whether ``value`` is a guard this package made (a callable of ours wrapping another)."""
    return callable(value) and str(getattr(value, "__module__", "")).startswith(_OURS) and hasattr(value, "__wrapped__")


def guards_in(homes: tuple[Any, ...]) -> dict[int, tuple[Any, Any]]:
    """``{id(original): (original, guard)}`` for every guard found under a name of ``homes``
    (modules and classes): each layer below the outer guard maps to it."""
    found: dict[int, tuple[Any, Any]] = {}
    for home in homes:
        for value in list(vars(home).values()):
            if not is_guard(value):
                continue
            layer = value.__wrapped__
            while layer is not None and id(layer) not in found:
                found[id(layer)] = (layer, value)
                layer = getattr(layer, "__wrapped__", None) if is_guard(layer) else None
    return found


def _guard_cells(found: dict[int, tuple[Any, Any]]) -> set[int]:
    """The closure cells of every guard layer: they hold what the layer calls, on purpose."""
    cells: set[int] = set()
    for _original, guard in found.values():
        layer = guard
        while is_guard(layer):
            cells.update(id(cell) for cell in getattr(layer, "__closure__", None) or ())  # a class guard has none
            layer = layer.__wrapped__
    return cells


def redirect_saved(homes: tuple[Any, ...]) -> int:
    """Put the guard wherever a module, class or function saved an original (see the module
    docstring); returns how many references were changed."""
    found = guards_in(homes)
    if not found:
        return 0
    frozen = gc.get_freeze_count()
    if frozen:  # the permanent generation (core/_gc.py's settle) is not walked by get_referrers
        gc.unfreeze()
    try:
        return _redirect(found)
    finally:
        if frozen:
            gc.freeze()  # what start-up made stays frozen (and what was made since joins it)


def _redirect(found: dict[int, tuple[Any, Any]]) -> int:
    """Two walks of the heap: the holders of the originals, then the owners of those holders
    that are not modules' globals (a class's attributes, a function's defaults)."""
    ours = {id(vars(m)) for name, m in list(sys.modules.items()) if name.startswith(_OURS) and m is not None}
    modules = {id(vars(m)) for m in list(sys.modules.values()) if isinstance(m, types.ModuleType)}
    skip_cells = _guard_cells(found)
    changed, owned = 0, {}
    for holder in gc.get_referrers(*(original for original, _guard in found.values())):
        if isinstance(holder, dict) and id(holder) in modules and id(holder) not in ours:
            for name in [k for k, v in list(holder.items()) if id(v) in found and isinstance(k, str)]:
                holder[name], changed = found[id(holder[name])][1], changed + 1
        elif isinstance(holder, dict | tuple) and id(holder) not in ours:
            owned[id(holder)] = holder
        elif isinstance(holder, types.CellType) and id(holder) not in skip_cells:
            pair = found.get(id(holder.cell_contents))
            if pair is not None:
                holder.cell_contents, changed = pair[1], changed + 1
        elif isinstance(holder, set):
            for _original, guard in [found[id(v)] for v in holder if id(v) in found]:
                holder.add(guard)
    for owner in gc.get_referrers(*owned.values()) if owned else ():
        if isinstance(owner, types.FunctionType) and not str(owner.__module__).startswith(_OURS):
            changed += _in_function(owner, owned, found)
        elif isinstance(owner, type) and not str(owner.__module__).startswith(_OURS):
            changed += _in_class(owner, owned, found)
    return changed


def _swap(value: Any, found: dict[int, tuple[Any, Any]]) -> Any:
    return found[id(value)][1] if id(value) in found else value


def _in_function(owner: types.FunctionType, owned: dict[int, Any], found: dict[int, tuple[Any, Any]]) -> int:
    """A function's ``__defaults__`` and ``__kwdefaults__`` (new ones: the tuple cannot change)."""
    changed = 0
    if id(owner.__defaults__) in owned:
        owner.__defaults__ = tuple(_swap(v, found) for v in owner.__defaults__ or ())
        changed += 1
    if id(owner.__kwdefaults__) in owned:
        owner.__kwdefaults__ = {k: _swap(v, found) for k, v in (owner.__kwdefaults__ or {}).items()}
        changed += 1
    return changed


def _in_class(owner: type, owned: dict[int, Any], found: dict[int, tuple[Any, Any]]) -> int:
    """A Python class's own attributes, through ``setattr`` (a type implemented in C cannot change)."""
    changed = 0
    for name, value in list(vars(owner).items()):
        if id(value) in found and isinstance(name, str):
            try:
                setattr(owner, name, found[id(value)][1])
                changed += 1
            except TypeError:
                pass  # an immutable type (_socket.socket): its methods are the originals themselves
    return changed
