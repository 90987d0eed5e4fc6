"""JSON Schemas written elsewhere (an upstream's tool listing, an OpenAPI document), checked
without the costs such a schema could otherwise impose on the whole server.

:func:`validator` makes the ``jsonschema`` validator both plugins check arguments with, except that:

- **nothing is fetched.** A ``$ref`` (``$dynamicRef``, ``$recursiveRef``) that does not start with
  ``#`` is refused when the validator is made (``jsonschema`` would fetch an ``http`` one with
  ``urllib``, at each call, on the event loop); and the validator's registry retrieves nothing, so a
  reference that resolves elsewhere anyway (through an ``$id``) fails the call, named;
- **every pattern runs in linear time.** ``pattern``, ``patternProperties`` and the property names
  ``additionalProperties`` compares with them are matched by the Rust ``regex`` crate (through
  ``pydantic-core``), which has no backtracking: ``(a+)+$`` against a long string takes
  microseconds, where Python's ``re`` takes longer than the universe has (and holds the event loop
  meanwhile). A pattern that crate cannot run (look-around, backreferences) is refused when the
  validator is made; so is ``unevaluatedProperties`` beside ``patternProperties``, which
  ``jsonschema`` would match with ``re``;
- **a schema that refers to itself without end** (``{"$ref": "#"}``) is refused when made (it
  recurses on an empty object), and any other endless recursion is a :class:`SchemaLoop` raised
  by the call, not a crash.

Sources: JSON Schema 2020-12, Validation §6.3.3 (``pattern``: ECMA-262, not anchored) and Core
§10.3.2.2 (``patternProperties``); the Rust crate's syntax: https://docs.rs/regex (no look-around or
backreferences, by design, for its linear-time guarantee).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["SchemaLoop", "UnsafeSchema", "validator"]

_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


class UnsafeSchema(ValueError):
    """A schema this server will not check arguments against (the message says why)."""


class SchemaLoop(ValueError):
    """Checking a value recursed without end through the schema's references."""


@lru_cache(maxsize=4096)
def _matcher(pattern: str) -> Any:
    """A linear-time matcher of ``pattern`` (search semantics, as JSON Schema's).

    :raises UnsafeSchema: the Rust ``regex`` crate cannot run it (look-around, backreferences, or
        past its size limit).
    """
    from pydantic_core import SchemaError, SchemaValidator, core_schema

    try:
        return SchemaValidator(core_schema.str_schema(pattern=pattern, regex_engine="rust-regex"))
    except SchemaError as exc:
        why = str(exc).splitlines()[-1].removeprefix("error: ").strip()[:200]
        raise UnsafeSchema(
            f"pattern {pattern[:100]!r} cannot be checked in linear time ({why}); "
            "look-around and backreferences are not run here"
        ) from None


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (linear time)."""
    return bool(_matcher(pattern).isinstance_python(text))


def _walk(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every subschema (every object) in ``node``, once each, without recursing on the stack."""
    stack, seen = [node], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Mapping):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _refused(schema: Mapping[str, Any]) -> None:
    """:raises UnsafeSchema: ``schema`` refers outside itself, has a pattern the crate cannot
    run, or matches ``unevaluatedProperties`` beside ``patternProperties``."""
    for sub in _walk(schema):
        for key in _REF_KEYS:
            ref = sub.get(key)
            if isinstance(ref, str) and not ref.startswith("#"):
                raise UnsafeSchema(
                    f"{key} {ref[:200]!r} refers to a schema outside this one; "
                    "only references within it (#/...) are followed here: nothing is fetched"
                )
        if isinstance(pattern := sub.get("pattern"), str):
            _matcher(pattern)
        if isinstance(patterns := sub.get("patternProperties"), Mapping):
            for pattern in patterns:
                _matcher(pattern)
            if "unevaluatedProperties" in sub:
                raise UnsafeSchema("unevaluatedProperties beside patternProperties is not checked here")


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"does not match the pattern {pattern[:100]!r}")  # the value may be a secret: not quoted


def _pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    others = [k for k in instance if k not in named and not any(search(p, k) for p in patterns)]
    if validator.is_type(extra, "object"):
        for name in others:
            yield from validator.descend(instance[name], extra, path=name)
    elif not extra and others:
        listed = ", ".join(repr(k) for k in sorted(others)[:10])
        verb = "was" if len(others) == 1 else "were"
        yield ValidationError(f"Additional properties are not allowed ({listed} {verb} unexpected)")


def validator(schema: Mapping[str, Any], *, draft: type[Validator] | None = None, checked: bool = False) -> Validator:
    """A ``jsonschema`` validator of ``schema`` (its ``$schema``'s draft, else ``draft``, else
    2020-12) that fetches nothing and matches patterns in linear time (see the module docstring).

    :param checked: ``schema`` was checked against its meta-schema already (not repeated).

    :raises UnsafeSchema: ``schema`` refers outside itself, has a pattern that cannot run in
        linear time, or refers to itself without end.
    :raises jsonschema.exceptions.SchemaError: ``schema`` is not a valid schema of its draft.
    """
    import jsonschema.validators
    from referencing import Registry
    from referencing.exceptions import NoSuchResource, Unresolvable

    def nothing(uri: str) -> Any:
        raise NoSuchResource(ref=uri)  # type: ignore[call-arg,unused-ignore]  # an attrs field

    _refused(schema)
    base = jsonschema.validators.validator_for(schema, default=draft or jsonschema.Draft202012Validator)
    if not checked:
        base.check_schema(dict(schema))
    keywords = {"pattern": _pattern, "patternProperties": _pattern_properties}
    if "additionalProperties" in base.VALIDATORS:
        keywords["additionalProperties"] = _additional_properties
    extended = jsonschema.validators.extend(base, keywords)  # type: ignore[no-untyped-call,unused-ignore]
    made = extended(schema, registry=Registry(retrieve=nothing))  # type: ignore[call-arg,unused-ignore]  # attrs field
    try:
        made.is_valid({})
    except RecursionError:
        raise UnsafeSchema("it refers to itself without end (a $ref cycle reached with no value to check)") from None
    except Unresolvable as exc:
        raise UnsafeSchema(f"its reference {str(exc.ref)[:200]!r} does not resolve within it") from None
    return made  # type: ignore[no-any-return,unused-ignore]


def errors(checker: Validator, value: Any) -> list[Any]:
    """``checker``'s errors for ``value``, in the order of where they are.

    :raises SchemaLoop: checking ``value`` recursed without end through the schema's references.
    :raises ValueError: a reference resolves to something outside the schema (nothing is fetched).
    """
    from referencing.exceptions import Unresolvable

    try:
        return sorted(checker.iter_errors(value), key=lambda e: list(e.absolute_path))
    except RecursionError:
        raise SchemaLoop("the tool's input schema refers to itself without end for this value") from None
    except Unresolvable as exc:
        raise ValueError(
            f"the tool's input schema has a reference that does not resolve within it ({str(exc.ref)[:200]!r}); "
            "nothing is fetched"
        ) from None
