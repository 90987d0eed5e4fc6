"""JSON Schemas out of an OpenAPI document's schema objects, and the tool argument models they make.

A tool's ``inputSchema`` must be one self-contained JSON Schema, so schema objects are copied with
each ``#/components/schemas/X`` reference rewritten to ``#/$defs/X`` and the components they reach
(transitively, recursion included) put under ``$defs``. OpenAPI 3.1 schema objects already are JSON
Schema 2020-12; 3.0's differ in a few keywords, rewritten here: ``nullable: true`` adds ``"null"``
to ``type``, a boolean ``exclusiveMinimum``/``exclusiveMaximum`` becomes the number form, and
``example`` becomes ``examples``; ``discriminator``, ``xml`` and ``externalDocs`` are dropped (they
describe, they do not constrain).

Arguments are validated against that schema by ``jsonschema`` (the validator the OpenAPI validator
itself is built on), inside a pydantic model so the core's tool path (``input_model.model_validate``,
``model_dump``, ``model_json_schema``) works unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["UnsupportedSchema", "arguments_model", "json_schema"]

_COMPONENT = "#/components/schemas/"
_DROPPED_30 = ("discriminator", "xml", "externalDocs")


class UnsupportedSchema(ValueError):
    """A schema object this plugin cannot make self-contained (a reference outside ``components/schemas``)."""


def json_schema(schema: Any, components: Mapping[str, Any], version: str) -> dict[str, Any]:
    """``schema`` (an OpenAPI schema object) as a self-contained JSON Schema 2020-12.

    :param components: the document's ``components.schemas``.
    :param version: the document's ``openapi`` field, e.g. ``"3.0.3"`` or ``"3.1.0"``.
    :raises UnsupportedSchema: a ``$ref`` that does not point into ``#/components/schemas/``.
    """
    legacy = version.startswith("3.0")
    needed: dict[str, Any] = {}
    pending: list[str] = []

    def visit(node: Any) -> Any:
        if isinstance(node, list):
            return [visit(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: visit(value) for key, value in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith(_COMPONENT) or ref[len(_COMPONENT) :] not in components:
                raise UnsupportedSchema(f"schema reference {ref!r} does not name one of components.schemas")
            name = ref[len(_COMPONENT) :]
            out["$ref"] = f"#/$defs/{name}"
            if name not in needed:
                needed[name] = None
                pending.append(name)
        return _modern(out) if legacy else out

    root = visit(copy.deepcopy(schema)) if schema is not None else {}
    while pending:
        name = pending.pop()
        needed[name] = visit(copy.deepcopy(components[name]))
    if needed:
        root = {**root, "$defs": {**root.get("$defs", {}), **needed}}
    return root


def _modern(node: dict[str, Any]) -> dict[str, Any]:
    """One OpenAPI 3.0 schema object's keywords in their JSON Schema 2020-12 form."""
    for key in _DROPPED_30:
        node.pop(key, None)
    if node.pop("nullable", False) is True and "type" in node:
        kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
        node["type"] = [*kinds, "null"]
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if node.get(bound) is True and limit in node:
            node[bound] = node.pop(limit)
        elif node.get(bound) is False:
            del node[bound]
    if "example" in node:
        node["examples"] = [node.pop("example")]
    return node


class _Arguments(BaseModel):
    """Arguments of an OpenAPI-derived tool: any JSON object its schema accepts (see :func:`arguments_model`)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    schema_: ClassVar[dict[str, Any]] = {"type": "object"}
    validator_: ClassVar[Draft202012Validator] = Draft202012Validator({"type": "object"})

    @model_validator(mode="before")
    @classmethod
    def _valid(cls, data: Any) -> Any:
        errors = sorted(cls.validator_.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            said = "; ".join(
                f"{'/'.join(map(str, e.absolute_path)) or '(arguments)'}: {e.message[:200]}" for e in errors[:5]
            )
            raise ValueError(said)
        return data

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The schema built from the document (pydantic's own would be an empty object)."""
        return copy.deepcopy(cls.schema_)


def arguments_model(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model named ``name`` whose JSON Schema is ``schema`` and whose validation is
    ``schema``'s (by ``jsonschema``, Draft 2020-12); ``model_dump()`` gives the arguments back.

    :raises jsonschema.exceptions.SchemaError: ``schema`` is not a valid JSON Schema.
    """
    Draft202012Validator.check_schema(schema)
    namespace = {"schema_": schema, "validator_": Draft202012Validator(schema), "__module__": __name__}
    return type(name, (_Arguments,), namespace)
