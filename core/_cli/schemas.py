"""JSON schemas of plugin settings models, as ``mcp-providers plugins --settings`` prints them.

Pydantic leaves a ``default_factory`` default out of a JSON schema (the factory is not called);
an operator reading the schema still needs to know what an omitted key means, so here the factory
is called once and its value shown when it is JSON (a list, a table, a string ...). A factory
that takes the validated data, raises, or makes something JSON cannot hold stays unshown.
Field descriptions come from the model: ``Field(description=...)`` (the built-in plugins' way), or
field docstrings when the model sets ``use_attribute_docstrings=True``, which costs a start-up the
reading of the model's source.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, NoDefault
from pydantic_core import core_schema


class _WithFactoryDefaults(GenerateJsonSchema):
    """Pydantic's generator, also showing the values of argument-free ``default_factory`` defaults."""

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        factory = schema.get("default_factory")
        if "default" in schema or factory is None or schema.get("default_factory_takes_data"):
            return super().get_default_value(schema)
        try:
            value = factory()  # type: ignore[call-arg]
            json.dumps(value)
        except Exception:  # a factory's own failure, or a value JSON cannot hold: show no default
            return NoDefault
        return value


def settings_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema (draft 2020-12, pydantic's validation mode) of a settings model, with
    ``default`` also for fields whose default is made by an argument-free ``default_factory``."""
    return model.model_json_schema(schema_generator=_WithFactoryDefaults)
