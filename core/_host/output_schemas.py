"""A tool's output model as the JSON Schema it is served with (``outputSchema``): wrapped under
:data:`RESULT_KEY` when its root is not an object, refused (``output-schema-unservable``) when
pydantic cannot describe it."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel

from mcp_providers._holders import Frozen
from mcp_providers._host.declarations import Declared, Problem
from mcp_providers.models import Tool

RESULT_KEY = "result"
"""The property a non-object output is wrapped under, in ``outputSchema`` and ``structuredContent``."""


class UnservableSchema(ValueError):
    """A model pydantic cannot describe as JSON Schema (the message says why)."""


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class OutputSchema(Frozen):
    """A tool's ``outputSchema`` as served: always an object root.

    ``wrapped``: the model's own schema is under ``properties.result`` (its root was an array, a
    recursive ``$ref`` or another non-object), and ``structuredContent`` is ``{"result": <output>}``.
    """

    __slots__ = ("schema", "wrapped")

    schema: dict[str, Any]
    wrapped: bool

    def __init__(self, schema: dict[str, Any], wrapped: bool) -> None:
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "wrapped", wrapped)


@functools.cache
def output_schema(model: type[BaseModel]) -> OutputSchema:
    """The served ``outputSchema`` of ``model`` (computed once per model).

    :raises UnservableSchema: pydantic cannot produce a JSON Schema for ``model``.
    """
    schema = _json_schema(model)
    if schema.get("type") == "object":
        return OutputSchema(schema, wrapped=False)
    defs = schema.pop("$defs", None)
    wrapper: dict[str, Any] = {
        "type": "object",
        "description": f"The tool's output is wrapped: read it from {RESULT_KEY!r} (its schema root is not an object).",
        "properties": {RESULT_KEY: schema},
        "required": [RESULT_KEY],
    }
    if defs:
        wrapper["$defs"] = defs  # "#/$defs/..." references resolve from the new root as before
    return OutputSchema(wrapper, wrapped=True)


def _json_schema(model: type[BaseModel]) -> dict[str, Any]:
    try:
        return model.model_json_schema(by_alias=True)
    except Exception as exc:  # pydantic raises several kinds; all mean the same here
        raise UnservableSchema(f"{type(exc).__name__}: {str(exc)[:300]}") from None


def servable(d: Declared, tool: Tool) -> Problem | None:
    """A problem for a tool whose input or output model has no JSON Schema, else None."""
    try:
        _json_schema(tool.input_model)
        if tool.output_model is not None:
            output_schema(tool.output_model)
    except UnservableSchema as exc:
        return Problem(
            (d.plugin,),
            "output-schema-unservable",
            tool.name,
            f"its models have no JSON Schema ({exc}); the tool is not served, the rest of the plugin is",
            "use JSON-describable field types (or a custom __get_pydantic_json_schema__)",
        )
    return None
