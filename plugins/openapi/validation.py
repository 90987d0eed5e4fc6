"""``openapi-spec-validator``'s validators, with their bookkeeping made linear.

The library (0.9) remembers what it has seen in lists and asks ``x in list`` once per item: the
operationIds it met (:class:`~openapi_spec_validator.validation.keywords.OperationValidator`) and
the schemas it visited and meta-checked (``SchemaValidator``). Each question costs as much as the
list is long, so a document's validation grows with the square of its operations and schemas (a
20,000-path document took about a minute to ``check``). The subclasses here keep the same lists,
as the library reads them, with a set beside them for the question.

The meta-schema pass of a 3.0 document also remembers, per document, which values it found valid
against which definition (:func:`_remembering`): the same parameter or response object, repeated
on thousands of paths, is checked once (about half the validation of a large document). A 3.1
document's meta-schema validator resolves over a registry crawled once (:func:`_crawled`), not once
per ``$dynamicRef``. Nothing else changes: the same meta-schema, the same checks, the same errors.

These lean on names the libraries do not document (the three lists above; jsonschema's
``_resolver._base_uri`` and ``_validate_reference``). ``openapi-spec-validator`` is pinned to the
minor they were read from (0.9) and :func:`linear_available` checks them once: where one is gone,
:func:`validate` uses the library's own validators, slower on a large document but the same checks.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

import jsonschema.validators
import referencing
import referencing.jsonschema
from jsonschema_specifications import REGISTRY as SPECIFICATIONS  # type: ignore[import-untyped]
from openapi_spec_validator.validation import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator, keywords
from openapi_spec_validator.validation.validators import SpecValidator

__all__ = ["validate"]


class _Seen(list[Any]):
    """A list whose ``in`` is a set lookup (the library only appends to it and asks ``in``)."""

    def __init__(self) -> None:
        super().__init__()
        self._members: set[Hashable] = set()

    def append(self, item: Any) -> None:
        self._members.add(item)
        super().append(item)

    def __contains__(self, item: object) -> bool:
        return item in self._members


class _Operation(keywords.OperationValidator):
    def __init__(self, registry: Any) -> None:
        super().__init__(registry)
        self.operation_ids_registry = _Seen()


def _linear_schema(base: type[keywords.SchemaValidator]) -> type[keywords.SchemaValidator]:
    class Linear(base):  # type: ignore[valid-type,misc]  # a class made per schema dialect
        def __init__(self, registry: Any) -> None:
            super().__init__(registry)
            self.visited_schema_ids = _Seen()
            self.meta_checked_schema_ids = _Seen()

    Linear.__name__ = Linear.__qualname__ = f"Linear{base.__name__}"
    return Linear


def _remembering(meta: Any) -> Any:
    """``meta`` (a jsonschema validator of a Draft 4 meta-schema) whose ``$ref`` remembers what it
    found valid: a document repeats the same parameter, response or schema object thousands of
    times, and each is checked once. Only successes are remembered (a failure is checked again, so
    errors are the library's own); Draft 4 has no dynamic scope, so a value valid against a
    definition under one resolution base is valid against it under that base anywhere."""
    valid: set[bytes] = set()

    def ref(validator: Any, ref: str, instance: Any, schema: Any) -> Iterator[Any]:
        base = str(getattr(validator._resolver, "_base_uri", ""))
        key = hashlib.blake2b(f"{base}\0{ref}\0{instance!r}".encode(), digest_size=16).digest()
        if key in valid:
            return
        errors = list(validator._validate_reference(ref=ref, instance=instance))
        if not errors:
            valid.add(key)
        yield from errors

    remembering = jsonschema.validators.extend(meta.__class__, {"$ref": ref})  # type: ignore[no-untyped-call]
    return remembering(meta.schema, format_checker=meta.format_checker)


@functools.cache
def _crawled(version: str) -> Any:
    """The meta-schema validator of OpenAPI ``version`` (``"3.1"``) over a registry crawled once.

    jsonschema resolves each ``$dynamicRef`` (3.1's ``#meta``, twice an operation) through an
    anchor lookup; in a registry not yet crawled that lookup crawls every known meta-schema (about
    750 subresources) and keeps the crawled registry for that one lookup only: 14 ms a lookup, about
    three quarters of a 3.1 document's validation. Crawled here once, each lookup finds the anchor.
    The same meta-schema and the same checks."""
    meta: Any = _STOCK[version].schema_validator
    resource = referencing.Resource.from_contents(meta.schema, default_specification=referencing.jsonschema.DRAFT202012)
    registry = SPECIFICATIONS.with_resource(resource.id() or "", resource).crawl()
    return meta.__class__(meta.schema, registry=registry, format_checker=meta.format_checker)


def _linear(base: type[SpecValidator], *, remember: bool) -> type[SpecValidator]:
    validators: Mapping[str, type[keywords.KeywordValidator]] = base.keyword_validators
    replaced = {"operation": _Operation, "schema": _linear_schema(validators["schema"])}  # type: ignore[arg-type]

    def __init__(self: SpecValidator, schema: Any) -> None:
        base.__init__(self, schema)
        if remember:  # per validation: what is remembered lives as long as one document's check
            self.schema_validator = _remembering(base.schema_validator)
        else:
            self.schema_validator = _crawled("3.1")

    namespace = {"keyword_validators": {**validators, **replaced}, "__init__": __init__}
    return type(f"Linear{base.__name__}", (base,), namespace)


_STOCK = {"3.0": OpenAPIV30SpecValidator, "3.1": OpenAPIV31SpecValidator}

# 3.1's meta-schema is Draft 2020-12, whose $dynamicRef makes a $ref's result depend on the path
# taken: its $ref results are not remembered (its registry is crawled once instead: _crawled).
_BY_VERSION = {
    "3.0": _linear(OpenAPIV30SpecValidator, remember=True),
    "3.1": _linear(OpenAPIV31SpecValidator, remember=False),
}


@functools.cache
def linear_available() -> bool:
    """Whether the installed libraries still have the undocumented names the linear validators use."""
    try:
        registry = OpenAPIV30SpecValidator({"openapi": "3.0.3", "info": {}, "paths": {}}).keyword_validators
        nothing: Any = None  # the validators keep their registry and never touch it while being made
        operation, schema = _Operation(nothing), _linear_schema(keywords.SchemaValidator)(nothing)
        plain_operation, plain_schema = keywords.OperationValidator(nothing), keywords.SchemaValidator(nothing)
        meta = jsonschema.validators.Draft4Validator({})
    except Exception:
        return False
    return (
        {"operation", "schema"} <= set(registry)
        and isinstance(getattr(plain_operation, "operation_ids_registry", None), list)
        and isinstance(getattr(plain_schema, "visited_schema_ids", None), list)
        and isinstance(getattr(plain_schema, "meta_checked_schema_ids", None), list)
        and isinstance(operation.operation_ids_registry, _Seen)
        and isinstance(schema.visited_schema_ids, _Seen)
        and hasattr(getattr(meta, "_resolver", None), "_base_uri")
        and callable(getattr(meta, "_validate_reference", None))
    )


def validate(spec: dict[str, Any], version: str) -> None:
    """Validate ``spec``, an OpenAPI ``version`` (``"3.0.x"`` or ``"3.1.x"``) document: with the
    linear validators when :func:`linear_available`, else with the library's own.

    :raises openapi_spec_validator.validation.exceptions.OpenAPIValidationError: the first error.
    :raises referencing.exceptions.Unresolvable: a ``$ref`` to what the document does not have.
    """
    chosen = _BY_VERSION if linear_available() else _STOCK
    chosen[version[:3]](spec).validate()
