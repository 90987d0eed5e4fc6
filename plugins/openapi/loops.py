"""``$ref`` chains that loop (``A -> B -> A``, nothing but references), found before validation.

The validator follows such a chain until Python's recursion limit, wherever it is in the document,
so one looping pair of components nobody uses made the whole service serve nothing. Here only what
an operation uses is judged: :func:`looping` finds the references whose chain loops and everything
that reaches one (through any number of other references); :func:`pruned` gives the validator the
document without those components and operations. The operations left out are then reported as
left out (:attr:`~mcp_providers.plugins.openapi.document.Operation.unsupported`), and the rest of
the document is validated and served. A document with no such loop is validated as it is.

A schema that refers to itself through a property (a tree) is not a loop here: it has content, the
validator follows it once, and the schema converter leaves out the operation that uses it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

__all__ = ["Loops", "looping", "pruned", "refs_in"]

Key = tuple[str, ...]
"""A reference inside the document as the keys it walks: ``#/components/schemas/A`` ->
``("components", "schemas", "A")``."""

_MISSING = object()
_OPERATIONS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _key(ref: str) -> Key | None:
    """The keys of an internal reference, ``None`` for another file or URL."""
    if not ref.startswith("#"):
        return None
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in unquote(ref[1:]).split("/")[1:])


def _at(spec: Any, key: Key) -> Any:
    node = spec
    for part in key:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def refs_in(node: Any) -> Iterator[str]:
    """Every ``$ref`` string in ``node``, at any depth (iterative: a deep document is no recursion)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                yield ref
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


class Loops:
    """The references of one document whose chain loops, and those that reach one."""

    def __init__(self, looping: dict[Key, str], tainted: dict[Key, str]) -> None:
        self.looping = looping
        """Key of each reference on a loop -> the reference as written."""
        self.tainted = tainted
        """Key of each reference that reaches a loop -> the looping reference it reaches."""

    def reached_from(self, node: Any) -> str | None:
        """The looping reference ``node`` reaches, or ``None``."""
        for ref in refs_in(node):
            key = _key(ref)
            if key is not None and key in self.tainted:
                return self.tainted[key]
        return None


def looping(spec: dict[str, Any], refs: set[str]) -> Loops | None:
    """The loops among ``refs`` (every ``$ref`` of ``spec``), or ``None`` when there is none."""
    keys = {walked: ref for ref in refs if (walked := _key(ref)) is not None}
    loops: dict[Key, str] = {}
    for start in keys:
        chain: list[Key] = []
        key: Key | None = start
        while key is not None and key not in loops:
            if key in chain:
                loops.update((k, keys.get(k, "#/" + "/".join(k))) for k in chain[chain.index(key) :])
                break
            chain.append(key)
            target = _at(spec, key)
            ref = target.get("$ref") if isinstance(target, dict) else None
            key = _key(ref) if isinstance(ref, str) else None
    if not loops:
        return None
    users: dict[Key, set[Key]] = {}
    for holder in keys:  # who refers to whom: the reverse graph, walked once from the loops
        for ref in refs_in(_at(spec, holder)):
            if (inner := _key(ref)) is not None:
                users.setdefault(inner, set()).add(holder)
    tainted = dict(loops)
    queue = deque(loops)
    while queue:
        reached = queue.popleft()
        for user in users.get(reached, ()):
            if user not in tainted:
                tainted[user] = tainted[reached]
                queue.append(user)
    return Loops(loops, tainted)


def pruned(spec: dict[str, Any], loops: Loops) -> tuple[dict[str, Any], dict[tuple[str, str], str]]:
    """``spec`` without the components and operations that reach a loop (a shallow copy; ``spec``
    is untouched), and ``(path, method) -> the looping reference`` of each operation taken out."""
    copy = dict(spec)
    components = spec.get("components")
    if isinstance(components, dict):
        copy["components"] = {
            kind: {name: v for name, v in section.items() if ("components", kind, name) not in loops.tainted}
            if isinstance(section, dict)
            else section
            for kind, section in components.items()
        }
    out: dict[tuple[str, str], str] = {}
    paths = spec.get("paths")
    if not isinstance(paths, dict):
        return copy, out
    kept_paths: dict[str, Any] = {}
    for path, item in paths.items():
        if not isinstance(item, dict):
            kept_paths[path] = item
            continue
        shared = loops.reached_from([item.get("parameters"), item.get("$ref")])  # every operation's
        kept = {}
        for name, value in item.items():
            if name in ("parameters", "$ref") and shared is not None:
                continue
            if name in _OPERATIONS and (reached := shared or loops.reached_from(value)) is not None:
                out[(path, name)] = reached
                continue
            kept[name] = value
        kept_paths[path] = kept
    copy["paths"] = kept_paths
    return copy, out
