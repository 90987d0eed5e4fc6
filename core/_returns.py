"""What a function hands back that no client can be given, found when it is called (no
declaration shows it): a coroutine or generator object (a forgotten ``await``, a ``yield`` where
a ``return`` was meant) and a number JSON cannot carry (NaN, Infinity); and :func:`yields`, which
:mod:`mcp_providers._decorated` asks when it reads a function, so a generator function is refused
at declaration. The other declaration-time checks are there and in :mod:`mcp_providers._adapters`."""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Callable
from typing import Any

_NOT_VALUES = (types.CoroutineType, types.GeneratorType, types.AsyncGeneratorType)


def yields(function: Callable[..., Any]) -> bool:
    """Whether ``function`` is a generator function, sync or async (its code's flags read directly:
    this runs for every decorated function while ``serve`` starts)."""
    code = getattr(function, "__code__", None)
    if code is not None:
        return bool(code.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR))
    return inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function)  # a partial, say


def unservable(function: Callable[..., Any]) -> str | None:
    """Why ``function`` cannot be declared as it is, or ``None``: it is no function or method (a
    ``functools.partial``, a callable object: its parameters cannot be read), or a generator
    function (a resource, tool, prompt or completion is answered once)."""
    wrapped = getattr(function, "__wrapped__", None)  # a decorator's own result, stacked: the function it wraps
    if not any(inspect.isfunction(f) or inspect.ismethod(f) for f in (function, wrapped)):  # a partial, an object
        return (
            f"is a {type(function).__name__} object, not a function, so its parameters cannot be read; "
            "decorate a def or async def (one that calls it, if it must be this object)"
        )
    if yields(function):
        return (
            "is a generator function (it yields), and a resource, tool, prompt or completion is answered "
            "once; return the value (collect the items in a list, or join them in a str) instead of yielding"
        )
    return None


def unawaited(result: object, where: str) -> None:
    """Refuse a coroutine or generator object returned as a value.

    :param where: how messages name the function (``"function notes.index"``).
    :raises TypeError: ``result`` is one; the message names the function and the fix. A coroutine
        or generator is closed first, so Python adds no "never awaited" warning of its own.
    """
    if not isinstance(result, _NOT_VALUES):
        return
    if isinstance(result, types.CoroutineType):
        result.close()
        raise TypeError(
            f"{where} returned a coroutine it did not await (a forgotten await); declare the function "
            "async def and return await ...(), or call a plain function instead"
        )
    if isinstance(result, types.GeneratorType):
        result.close()
    raise TypeError(
        f"{where} returned a generator; a value is returned once: collect the items and return them "
        "(a list, or a str), not yield them"
    )


def may_be_non_finite(text: str) -> bool:
    """Whether JSON text written by ``json.dumps`` or pydantic may hold NaN or Infinity (cheap:
    a string holding those words also says yes; :func:`non_finite` then decides)."""
    return "NaN" in text or "Infinity" in text


def non_finite(value: Any) -> str | None:
    """Where ``value`` (plain JSON-mode data: dicts, lists, str, numbers, bool, None) holds a
    float JSON cannot carry (NaN, Infinity, -Infinity), as ``result[2].price``; ``None`` if nowhere."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return path or "(the value itself)"
        if isinstance(item, dict):
            stack += [(v, f"{path}.{k}" if path else str(k)) for k, v in item.items()]
        elif isinstance(item, list | tuple):
            stack += [(v, f"{path}[{i}]") for i, v in enumerate(item)]
    return None
