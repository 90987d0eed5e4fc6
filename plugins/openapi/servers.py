"""The server URL a document names (OpenAPI 3.0 §4.7.5-6, 3.1 §4.8.5-6): its first ``servers``
entry, each ``{variable}`` replaced by the ``default`` its Server Variable Object gives (required
by the specification), resolved against the document's own URL.

A URL that cannot be filled says why, naming each variable: one the URL uses that its
``variables`` do not define (or define without a string ``default``), and a ``default`` outside
the variable's ``enum`` (3.1: it MUST be one of them; 3.0: SHOULD). The operator then sets
``base_url``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin

__all__ = ["server_url"]

_VARIABLE = re.compile(r"\{([^{}]*)\}")


def server_url(spec: Mapping[str, Any], url: str | None) -> tuple[str | None, str | None]:
    """The absolute server URL of ``spec`` read from ``url`` (``None``: a file), or why there is none.

    :returns: ``(url, None)``; ``(None, why)`` when its variables cannot be filled (``why`` names
        them, ``"the document's server URL '...' uses server variable 'x', which ..."``); ``(None,
        None)`` when it is relative to a file.
    """
    servers = spec.get("servers") or [{"url": "/"}]  # the specification's default when none is given
    first = servers[0] if isinstance(servers[0], Mapping) else {}
    template = first.get("url")
    if not isinstance(template, str):
        return None, None
    variables = first.get("variables")
    filled, problems = _filled(template, variables if isinstance(variables, Mapping) else {})
    if problems:
        return None, f"the document's server URL {template!r} " + "; ".join(problems)
    resolved = urljoin(url, filled) if url else filled
    return (resolved, None) if "://" in resolved else (None, None)


def _filled(template: str, variables: Mapping[str, Any]) -> tuple[str, list[str]]:
    """``template`` with each variable's default, and what stops one from being filled."""
    problems: list[str] = []

    def default(found: re.Match[str]) -> str:
        name = found[1]
        declared = variables.get(name)
        value = declared.get("default") if isinstance(declared, Mapping) else None
        if not isinstance(value, str):
            problems.append(f"uses server variable {name!r}, which its variables do not define with a default")
            return found[0]
        enum = declared.get("enum") if isinstance(declared, Mapping) else None
        if isinstance(enum, list) and enum and value not in enum:
            allowed = ", ".join(repr(v) for v in enum[:10])
            problems.append(f"has server variable {name!r}: its default {value!r} is not one of its enum ({allowed})")
        return value

    filled = _VARIABLE.sub(default, template)
    if not problems and ("{" in filled or "}" in filled):
        problems.append("holds a brace that opens or closes no server variable")
    return filled, problems
