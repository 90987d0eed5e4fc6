"""Query parameters: read from the URI a client read (:func:`from_uri`), and written into the
request's query string as each parameter's ``style`` and ``explode`` say (:func:`encode`).

Serialization (OpenAPI 3, "Style Values"; ``form`` with ``explode=true`` is the default)::

    style           explode  ["a", "b"]         {"x": 1, "y": 2}
    form            true     id=a&id=b          x=1&y=2
    form            false    id=a,b             id=x,1,y,2
    spaceDelimited  false    id=a%20b           (arrays only)
    pipeDelimited   false    id=a|b             (arrays only)
    deepObject      true     (objects only)     id[x]=1&id[y]=2

Each name and value is percent-encoded whole; only the delimiters are left as they are, so a
comma inside an item stays one item. A ``null`` value sends nothing.

A read names its query values in the URI (``openapi://shop/search?q=saw&limit=1``). A name the
operation does not take is refused, naming the ones it does; so is a name given twice, unless the
parameter is an array with ``explode`` (then each occurrence is one item, ``?tag=a&tag=b``). An
array without ``explode`` takes one value, split at its style's delimiter. Values are opaque: a
query value of ``..`` or ``%2e%2e`` is a value like any other (dot segments are a risk in paths,
and path values are refused them, see :func:`~mcp_providers.plugins.openapi.client.path_value`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from mcp_providers.config import suggestion
from mcp_providers.errors import InvalidParams
from mcp_providers.plugins.openapi.document import Operation, Parameter

__all__ = ["encode", "from_uri", "is_array", "is_object", "simple"]

_DELIMITERS = {"form": ",", "spaceDelimited": "%20", "pipeDelimited": "|"}
"""The delimiter of an array without ``explode``, as it appears in the query string."""


def _kinds(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    return {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()


def is_array(parameter: Parameter) -> bool:
    """Whether the parameter's schema is an array (``"array"`` or ``["array", "null"]``)."""
    return "array" in _kinds(parameter.schema)


def is_object(parameter: Parameter) -> bool:
    """Whether the parameter's schema is an object."""
    return "object" in _kinds(parameter.schema) or parameter.style == "deepObject"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def simple(value: Any) -> str:
    """A tool's path argument as the ``simple`` style writes it, before it is percent-encoded:
    ``true`` (not Python's ``True``), ``a,b`` for an array, ``x,1,y,2`` for an object."""
    if isinstance(value, list | tuple):
        return ",".join(_text(item) for item in value)
    if isinstance(value, dict):
        return ",".join(f"{_text(k)},{_text(v)}" for k, v in value.items())
    return _text(value)


def _q(value: Any) -> str:
    return quote(_text(value), safe="")


def _pairs(p: Parameter, value: Any) -> list[str]:
    """``name=value`` parts of one parameter, encoded."""
    name = _q(p.name)
    if value is None:
        return []
    if isinstance(value, dict):
        if p.style == "deepObject":
            return [f"{name}[{_q(k)}]={_q(v)}" for k, v in value.items()]
        if p.explode:
            return [f"{_q(k)}={_q(v)}" for k, v in value.items()]
        return [f"{name}=" + ",".join(f"{_q(k)},{_q(v)}" for k, v in value.items())]
    if isinstance(value, list | tuple):
        if p.explode:
            return [f"{name}={_q(item)}" for item in value]
        return [f"{name}=" + _DELIMITERS.get(p.style, ",").join(_q(item) for item in value)]
    return [f"{name}={_q(value)}"]


def encode(operation: Operation, values: Mapping[str, Any]) -> str:
    """The query string (no ``?``) of ``values`` (query parameter name -> JSON value), e.g.
    ``"tags=a%2Cb&tags=c"`` for ``{"tags": ["a,b", "c"]}`` of a ``form`` array with ``explode``."""
    by_name = {p.name: p for p in operation.parameters if p.location == "query"}
    return "&".join(part for name, value in values.items() for part in _pairs(by_name[name], value))


def _raw_query(uri: str) -> list[tuple[str, str]]:
    raw = uri.partition("?")[2].partition("#")[0]
    out = []
    for part in raw.split("&") if raw else ():
        key, _, value = part.partition("=")
        out.append((unquote(key), value))
    return out


def from_uri(operation: Operation, uri: str) -> dict[str, Any]:
    """The query values of a read of ``operation`` from the ``uri`` read (the one the gate saw):
    name -> string, or list of strings for an array.

    :raises InvalidParams: a name the operation does not take, or one given more than once where
        the parameter is not an exploded array.
    """
    by_name = {p.name: p for p in operation.parameters if p.location == "query"}
    found: dict[str, list[str]] = {}
    for name, raw in _raw_query(uri):
        found.setdefault(name, []).append(raw)
    unknown = [name for name in found if name not in by_name]
    if unknown:
        hint = suggestion(unknown[0], by_name, naming=len(unknown) > 1)
        raise InvalidParams(
            f"{operation.operation_id} takes no query parameter {', '.join(map(repr, unknown))}{hint}; "
            f"it takes: {', '.join(by_name) or '(none)'}",
            data={"uri": uri[:200], "unknown": unknown[:20]},
        )
    out: dict[str, Any] = {}
    for name, raws in found.items():
        p = by_name[name]
        if len(raws) > 1 and not (is_array(p) and p.explode):
            delimiter = unquote(_DELIMITERS.get(p.style, ","))
            raise InvalidParams(
                f"{operation.operation_id}: query parameter {name!r} is given {len(raws)} times; it takes one value"
                + (f" (an array: items separated by {delimiter!r})" if is_array(p) else ""),
                data={"uri": uri[:200], "parameter": name},
            )
        if is_array(p):
            items = raws if p.explode else raws[0].split(_DELIMITERS.get(p.style, ","))
            out[name] = [unquote(item) for item in items]
        else:
            out[name] = unquote(raws[0])
    return out
