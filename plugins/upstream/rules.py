"""The core's checks of one declaration, as the upstream plugin applies them to each listed component.

``mcp-providers check`` rejects a whole plugin for any problem in its declarations (a duplicate URI,
a template the SDK's parser refuses ...). An upstream's listing is not the operator's to fix, so
the mapping asks these functions first and leaves out just the component a rule would refuse
(:class:`~mcp_providers.plugins.upstream.mapping.LeftOut`); the rest of that upstream, and every
other upstream, is served. The rules themselves are the core's, from the public
:mod:`mcp_providers.uris` (the same functions ``check`` applies); here they are only phrased as
one reason per component.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_providers.uris import (
    UriProblem,
    canonical,
    canonical_template,
    literal_start,
    shape,
    template_problems,
    uri_problems,
)

__all__ = [
    "canonical",
    "canonical_template",
    "literal_start",
    "schema_problem",
    "shape",
    "template_problem",
    "uri_problem",
]


def _reason(problems: list[UriProblem]) -> str | None:
    return "; ".join(f"{p.what} ({p.rule})" for p in problems) or None


def uri_problem(uri: str) -> str | None:
    """Why the core would refuse ``uri`` as a fixed resource's URI, or ``None``
    (:func:`mcp_providers.uris.uri_problems`)."""
    return _reason(uri_problems(uri))


def template_problem(uri_template: str) -> str | None:
    """Why the core would refuse ``uri_template``, or ``None``
    (:func:`mcp_providers.uris.template_problems`)."""
    return _reason(template_problems(uri_template))


def schema_problem(schema: Mapping[str, Any] | None, what: str) -> str | None:
    """Why a tool's ``inputSchema`` or ``outputSchema`` cannot be served, or ``None``: MCP requires
    an object schema (``"type": "object"`` at the root); that it is valid JSON Schema is checked
    when its model is made (:func:`~mcp_providers.plugins.upstream.mapping.schema_model`)."""
    if schema is None or schema.get("type") == "object":
        return None
    return f'{what} is not an object schema (MCP requires "type": "object" at its root)'
