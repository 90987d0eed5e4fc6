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
comma inside an item stays one item. A ``null`` value sends nothing. A value the service would read
as something else is refused (:func:`_unambiguous`): an exploded object's member named like another
parameter (it would set it), a ``deepObject`` member name with brackets, a ``spaceDelimited`` or
``pipeDelimited`` item holding its delimiter.

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

__all__ = ["encode", "from_uri", "is_array", "is_object", "simple", "text"]

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


def text(value: Any) -> str:
    """JSON ``value``'s one text as sent: a string as it is, ``true``, ``null``, a number in its
    shortest form (``1`` for ``1.0`` too, and an integral one below 2**63 in digits: a JSON number
    has one value, and a rule naming the path ``/notes/1`` must hold for the path the value makes),
    anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:  # 1e16 is 10000000000000000
        return str(int(value))
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def simple(value: Any) -> str:
    """A tool's path argument as the ``simple`` style writes it, before it is percent-encoded:
    ``true`` (not Python's ``True``), ``a,b`` for an array, ``x,1,y,2`` for an object."""
    if isinstance(value, list | tuple):
        return ",".join(text(item) for item in value)
    if isinstance(value, dict):
        return ",".join(f"{text(k)},{text(v)}" for k, v in value.items())
    return text(value)


def _q(value: Any) -> str:
    return quote(text(value), safe="")


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


def encode(operation: Operation, values: Mapping[str, Any], *, reserved: tuple[str, ...] = ()) -> str:
    """The query string (no ``?``) of ``values`` (query parameter name -> JSON value), e.g.
    ``"tags=a%2Cb&tags=c"`` for ``{"tags": ["a,b", "c"]}`` of a ``form`` array with ``explode``.

    :param reserved: query names the server adds itself (an API key's), which no value may set.
    :raises InvalidParams: a value the service would read as another (:func:`_unambiguous`).
    """
    by_name = {p.name: p for p in operation.parameters if p.location == "query"}
    _unambiguous(operation, by_name, values, reserved)
    return "&".join(part for name, value in values.items() for part in _pairs(by_name[name], value))


_SPLIT_AT = {"spaceDelimited": " ", "pipeDelimited": "|"}
"""The delimiter of a delimited array as the service splits at it once the query is decoded."""


def _unambiguous(
    operation: Operation, by_name: Mapping[str, Parameter], values: Mapping[str, Any], reserved: tuple[str, ...]
) -> None:
    """Refuse what would read as something else once sent: a member of an exploded ``form`` object
    (sent as its own ``name=value``) named like a parameter of the operation, like a name the server
    adds (``reserved``), like a member of another such object, or empty; a ``deepObject`` member
    name with ``[`` or ``]`` (another nesting) or empty; an item of a ``spaceDelimited`` or
    ``pipeDelimited`` array holding its delimiter (two items to the service).

    :raises InvalidParams: which parameter, which member or item, and what to do instead.
    """
    taken = {p.name for p in operation.parameters} | set(reserved)
    members: dict[str, str] = {}
    for name, value in values.items():
        p, problem = by_name[name], None
        if isinstance(value, dict) and p.style == "form" and p.explode:
            for key in map(text, value):
                if key == "" or key in taken or key in members:
                    problem = _member_problem(key, name, members.get(key), key in reserved, key in taken)
                    break
                members[key] = name
        elif isinstance(value, dict) and p.style == "deepObject":
            bad = next((k for k in map(text, value) if k == "" or "[" in k or "]" in k), None)
            if bad is not None:
                problem = (
                    f"member name {bad!r} is refused: a deepObject member name may not be empty nor hold '[' or ']'"
                )
        elif isinstance(value, list | tuple) and not p.explode and p.style in _SPLIT_AT:
            delimiter = _SPLIT_AT[p.style]
            bad = next((item for item in map(text, value) if delimiter in item), None)
            if bad is not None:
                problem = (f"item {bad[:80]!r} holds its delimiter {delimiter!r}, so the service would read it as "
                           "more than one item; give each item without it")  # fmt: skip
        if problem is not None:
            raise InvalidParams(
                f"{operation.operation_id}: query parameter {name!r}: {problem}", data={"parameter": name}
            )


def _member_problem(key: str, name: str, first: str | None, reserved: bool, taken: bool) -> str:
    """Why member ``key`` of exploded object ``name`` is refused (see :func:`_unambiguous`)."""
    sent = "its members are sent as name=value pairs of their own"
    if key == "":
        return f"a member has an empty name; {sent}, and a pair needs a name"
    if first is not None:
        return f"{sent}, and query parameter {first!r} sends {key!r} too: it would be sent {key!r} a second time"
    if reserved:
        return f"member {key!r} is the name the service's API key is sent under; {sent}"
    if taken and key == name:
        return f"member {key!r} is the parameter's own name; {sent}, so it would read as the parameter's value"
    return f"member {key!r}, the name of another parameter of the operation, would set that parameter; {sent}"


def _raw_query(uri: str) -> list[tuple[str, str]]:
    raw = uri.partition("?")[2].partition("#")[0]
    out = []
    for part in raw.split("&") if raw else ():
        key, _, value = part.partition("=")
        out.append((unquote(key), value))
    return out


def from_uri(operation: Operation, uri: str) -> dict[str, Any]:
    """The query values of a read of ``operation`` from the ``uri`` read (the one the gate saw),
    each named in the URI by its template variable (:attr:`Parameter.variable`, ``api_version``
    for ``api-version``): parameter name -> string, or list of strings for an array.

    :raises InvalidParams: a name the operation's template does not take, or one given more than
        once where the parameter is not an exploded array.
    """
    by_name = {p.variable: p for p in operation.parameters if p.location == "query"}
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
            out[p.name] = [unquote(item) for item in items]
        else:
            out[p.name] = unquote(raws[0])
    return out
