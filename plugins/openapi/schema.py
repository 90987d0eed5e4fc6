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
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ConfigDict, model_validator

from mcp_providers.plugins import _schemas

__all__ = ["Converter", "UnsupportedSchema", "arguments_model", "json_schema"]

_COMPONENT = "#/components/schemas/"
_DROPPED_30 = ("discriminator", "xml", "externalDocs")
_META = Draft202012Validator(Draft202012Validator.META_SCHEMA)


class UnsupportedSchema(ValueError):
    """A schema object this plugin cannot make self-contained (a reference outside ``components/schemas``)."""


class Converter:
    """Makes self-contained JSON Schemas out of one document's schema objects (:meth:`json_schema`).

    Each component is converted and checked against the JSON Schema 2020-12 meta-schema once, and
    each distinct top-level schema once, so a document's cost grows with its size, not with its
    operations times the components they reach (a 20,000-path document once took a minute).

    :param components: the document's ``components.schemas``.
    :param version: the document's ``openapi`` field, e.g. ``"3.0.3"`` or ``"3.1.0"``.
    """

    def __init__(self, components: Mapping[str, Any], version: str) -> None:
        self._components = components
        self._legacy = version.startswith("3.0")
        self._converted: dict[str, tuple[Any, tuple[str, ...]]] = {}
        self._checked: set[str] = set()

    def json_schema(self, schema: Any) -> dict[str, Any]:
        """``schema`` (an OpenAPI schema object) as a self-contained JSON Schema 2020-12: the
        components it reaches, transitively, under ``$defs`` (shared between results: do not mutate).

        :raises UnsupportedSchema: a ``$ref`` that does not point into ``#/components/schemas/``, or
            a schema that is not valid JSON Schema 2020-12 once converted.
        """
        refs: list[str] = []
        root = self._visit(schema, refs) if schema is not None else {}
        self._check(root, "the schema")
        needed: dict[str, Any] = {}
        while refs:
            name = refs.pop()
            if name not in needed:
                needed[name], more = self._component(name)
                refs.extend(more)
        if needed:
            root = {**root, "$defs": {**root.get("$defs", {}), **needed}}
        return root if isinstance(root, dict) else {}

    def _component(self, name: str) -> tuple[Any, tuple[str, ...]]:
        if name not in self._converted:
            refs: list[str] = []  # its own name, when recursive: json_schema's loop stops there
            converted = self._visit(self._components[name], refs)
            self._check(converted, f"components.schemas.{name}")
            self._converted[name] = (converted, tuple(refs))
        return self._converted[name]

    def _visit(self, node: Any, refs: list[str]) -> Any:
        if isinstance(node, list):
            return [self._visit(item, refs) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: self._visit(value, refs) for key, value in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith(_COMPONENT) or ref[len(_COMPONENT) :] not in self._components:
                raise UnsupportedSchema(f"schema reference {ref!r} does not name one of components.schemas")
            refs.append(ref[len(_COMPONENT) :])
            out["$ref"] = f"#/$defs/{ref[len(_COMPONENT) :]}"
        return _modern(out) if self._legacy else out

    def _check(self, schema: Any, what: str) -> None:
        key = json.dumps(schema, sort_keys=True, default=str)
        if key in self._checked:
            return
        error = best_match(_META.iter_errors(schema))
        if error is not None:  # where and which rule: the message would quote the document
            where = "/".join(map(str, error.absolute_path)) or "(root)"
            raise UnsupportedSchema(f"{what} is not valid JSON Schema 2020-12 at {where} ({error.validator} rule)")
        self._checked.add(key)


def json_schema(schema: Any, components: Mapping[str, Any], version: str) -> dict[str, Any]:
    """``schema`` as a self-contained JSON Schema 2020-12 (one-off :meth:`Converter.json_schema`)."""
    return Converter(components, version).json_schema(copy.deepcopy(schema))


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
    validator_: ClassVar[Any] = Draft202012Validator({"type": "object"})

    @model_validator(mode="before")
    @classmethod
    def _valid(cls, data: Any) -> Any:
        errors = _schemas.errors(cls.validator_, data)
        if errors:
            # the core says "Invalid arguments for <tool>: (arguments): " before it: no second label at the root
            said = "; ".join(
                f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" if e.absolute_path else e.message[:200]
                for e in errors[:5]
            )
            raise ValueError(said)
        return data

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The schema built from the document (pydantic's own would be an empty object)."""
        return copy.deepcopy(cls.schema_)


def arguments_model(name: str, schema: dict[str, Any], *, checked: bool = False) -> type[BaseModel]:
    """A pydantic model named ``name`` whose JSON Schema is ``schema`` and whose validation is
    ``schema``'s (by ``jsonschema``, Draft 2020-12); ``model_dump()`` gives the arguments back.

    :param checked: ``schema`` is built of parts a :class:`Converter` checked (the meta-schema
        check, about 2 ms a schema, is then not repeated per tool).
    :raises jsonschema.exceptions.SchemaError: ``schema`` is not a valid JSON Schema.
    :raises UnsafeSchema: it refers outside itself, loops, or has a pattern not run in linear time
        (:mod:`mcp_providers.plugins._schemas`).
    """
    made = _schemas.validator(schema, draft=Draft202012Validator, checked=checked)  # nothing fetched, linear patterns
    namespace = {"schema_": schema, "validator_": made, "__module__": __name__}
    return type(name, (_Arguments,), namespace)
