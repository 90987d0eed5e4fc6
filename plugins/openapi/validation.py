"""``openapi-spec-validator``'s validators, with their bookkeeping made linear.

The library (0.9) remembers what it has seen in lists and asks ``x in list`` once per item: the
operationIds it met (:class:`~openapi_spec_validator.validation.keywords.OperationValidator`) and
the schemas it visited and meta-checked (``SchemaValidator``). Each question costs as much as the
list is long, so a document's validation grows with the square of its operations and schemas (a
20,000-path document took about a minute to ``check``). The subclasses here keep the same lists,
as the library reads them, with a set beside them for the question. Nothing else changes: the same
meta-schema, the same checks, the same errors.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

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


def _linear(base: type[SpecValidator]) -> type[SpecValidator]:
    validators: Mapping[str, type[keywords.KeywordValidator]] = base.keyword_validators
    replaced = {"operation": _Operation, "schema": _linear_schema(validators["schema"])}  # type: ignore[arg-type]
    return type(f"Linear{base.__name__}", (base,), {"keyword_validators": {**validators, **replaced}})


_BY_VERSION = {"3.0": _linear(OpenAPIV30SpecValidator), "3.1": _linear(OpenAPIV31SpecValidator)}


def validate(spec: dict[str, Any], version: str) -> None:
    """Validate ``spec``, an OpenAPI ``version`` (``"3.0.x"`` or ``"3.1.x"``) document.

    :raises openapi_spec_validator.validation.exceptions.OpenAPIValidationError: the first error.
    :raises referencing.exceptions.Unresolvable: a ``$ref`` to what the document does not have.
    """
    _BY_VERSION[version[:3]](spec).validate()
