"""Keys of a settings table that a model left at pydantic's default ``extra`` would drop unread.

pydantic ignores a key it does not know unless the model says otherwise, so a mistyped key in a
plugin's ``[plugins.NAME]`` table would be dropped and the operator's setting never applied. A
model (or a nested one, or a base class) that sets ``extra`` itself is taken at its word; one that
leaves the default is held to its fields, as if it forbade unknown keys.

The table is judged against the core schema pydantic validated it with, not against how the model
was written: the walk follows the table down the schema (models, dataclasses, TypedDicts, lists,
tuples, dicts, unions, named aliases), and wherever it meets something that may reshape the table
before a model reads it (a ``before``/``wrap``/``plain`` validator, an ``__init__`` or
``model_validate`` of the model's own, a schema kind it does not know) it refuses nothing below:
a valid plugin refused is worse than a typo missed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

__all__ = ["ignored_keys"]

Loc = tuple[int | str, ...]
Finding = tuple[Loc, tuple[str, ...]]
Schema = Mapping[str, Any]

# Wrappers that hand their input on unchanged to the schema under this key (an after-validator
# sees pydantic's output, but the table it was validated from is what went in below it).
_THROUGH = {
    "default": "schema",
    "nullable": "schema",
    "function-after": "schema",
    "custom-error": "schema",
    "json-or-python": "python_schema",
}
_ITEMS = {"list", "deque", "set", "frozenset", "generator"}
_DICTS = {"dict", "frozendict", "ordered-dict", "counter"}
_TABLES = {"model-fields", "dataclass", "dataclass-args", "typed-dict"}
# Leaf kinds that take neither a table nor an array, and kinds that take one but not the other:
# a union member of one of these was not the one pydantic chose for such input.
_SCALARS = {
    "none", "bool", "int", "float", "decimal", "complex", "str", "bytes", "date", "time", "datetime",
    "timedelta", "literal", "enum", "url", "multi-host-url", "uuid",
}  # fmt: skip
_NOT_A_TABLE = _SCALARS | {"list", "tuple", "set", "frozenset", "deque"}
_NOT_AN_ARRAY = _SCALARS | _DICTS | {"typed-dict", "dataclass"}
_DEPTH = 200  # wrappers that consume no input (a ref to a ref ...) cannot loop the walk forever


def ignored_keys(model: type[BaseModel], given: Mapping[str, Any]) -> list[Finding]:
    """Each key of ``given`` (the table ``model`` validated) that a model, dataclass or TypedDict
    leaving ``extra`` at its default dropped, nested tables included.

    :param model: the settings model ``given`` was validated with (``model.model_validate``).
    :param given: the table as the operator wrote it.
    :returns: ``(path to the key, the keys accepted there)`` pairs; empty where pydantic's reading
        of the table could be reshaped by code the walk cannot follow.
    """
    if any("model_validate" in vars(cls) for cls in model.__mro__[: model.__mro__.index(BaseModel)]):
        return []  # its own model_validate may reshape the table before the schema sees it
    schema: object = model.__pydantic_core_schema__
    if not isinstance(schema, Mapping):
        return []
    try:
        return list(_Walk().node(schema, given, (), {}, 0))
    except (LookupError, TypeError, AttributeError, ValueError, RecursionError):
        return []  # a schema shaped unlike any this walk knows: pydantic's reading stands


class _Walk:
    """One walk of a table down a core schema; ``refs`` holds the definitions met on the way."""

    def __init__(self) -> None:
        self.refs: dict[str, Schema] = {}

    def node(self, schema: Schema, given: object, loc: Loc, config: Schema, depth: int) -> Iterator[Finding]:
        if depth > _DEPTH:
            return
        if isinstance(schema.get("ref"), str):
            self.refs.setdefault(schema["ref"], schema)
        kind, deeper = schema.get("type"), depth + 1
        if kind == "definitions":
            self.refs.update((d["ref"], d) for d in schema["definitions"] if isinstance(d.get("ref"), str))
            yield from self.node(schema["schema"], given, loc, config, deeper)
        elif kind == "definition-ref":
            target = self.refs.get(schema["schema_ref"])
            if target is not None:
                yield from self.node(target, given, loc, config, deeper)
        elif kind in _THROUGH:
            yield from self.node(schema[_THROUGH[kind]], given, loc, config, deeper)
        elif kind == "chain":  # its first step reads the input
            yield from self.node(schema["steps"][0], given, loc, config, deeper)
        elif kind == "lax-or-strict":  # the two read a table's keys alike; strict only coerces less
            yield from self.node(schema["lax_schema"], given, loc, config, deeper)
        elif kind == "model" and not schema.get("custom_init"):  # an __init__ of its own may rename keys
            yield from self.node(schema["schema"], given, loc, schema.get("config") or {}, deeper)
        elif kind in _TABLES:
            yield from self.table(schema, given, loc, config, deeper)
        elif kind in _ITEMS or kind == "tuple":
            yield from self.items(schema, given, loc, config, deeper)
        elif kind in _DICTS and isinstance(given, Mapping) and schema.get("values_schema") is not None:
            for key, item in given.items():
                yield from self.node(schema["values_schema"], item, (*loc, key), config, deeper)
        elif kind == "named-tuple":
            yield from self.named_tuple(schema, given, loc, config, deeper)
        elif kind == "union":
            choices = [c[0] if isinstance(c, tuple) else c for c in schema["choices"]]
            yield from self.each_of(choices, given, loc, config, deeper)
        elif kind == "tagged-union":
            yield from self.tagged(schema, given, loc, config, deeper)
        # Anything else (a function-before/wrap/plain validator, a custom type, a leaf): pydantic's word stands.

    def table(self, schema: Schema, given: object, loc: Loc, config: Schema, depth: int) -> Iterator[Finding]:
        """A model's, dataclass's or TypedDict's fields read from ``given``: the keys none of them
        reads, unless ``extra`` was set, then each field's own table."""
        kind = schema["type"]
        if kind == "dataclass":  # its config and arguments; a validator between them stops the walk
            yield from self.node(schema["schema"], given, loc, schema.get("config") or config, depth)
            return
        if not isinstance(given, Mapping):
            return  # positional dataclass arguments, or an instance: no keys to judge
        config = (schema.get("config") or config) if kind == "typed-dict" else config
        fields = schema["fields"]
        named = fields.items() if isinstance(fields, Mapping) else [(f["name"], f) for f in fields]
        by_name = bool(config.get("validate_by_name"))
        by_alias = config.get("validate_by_alias", True) is not False
        # A dataclass field outside __init__ reads nothing from the table: its key is dropped too.
        read = [
            (_paths(name, field.get("validation_alias"), by_name, by_alias), field)
            for name, field in named
            if field.get("init") is not False
        ]
        if "extra_fields_behavior" not in config and schema.get("extra_behavior") in (None, "ignore"):
            accepted = tuple(dict.fromkeys(p[0] for paths, _ in read for p in paths if isinstance(p[0], str)))
            yield from (((*loc, key), accepted) for key in given if key not in accepted)
        for paths, field in read:
            for path in paths:
                found, item = _resolve(given, path)
                if found:  # pydantic reads the first of a field's keys present
                    yield from self.node(field["schema"], item, (*loc, *path), config, depth)
                    break

    def items(self, schema: Schema, given: object, loc: Loc, config: Schema, depth: int) -> Iterator[Finding]:
        """Each item of an array against its schema (a tuple's by position, its variadic one repeated)."""
        if not isinstance(given, Sequence) or isinstance(given, str | bytes):
            return
        for i, item in enumerate(given):
            one = _item_schema(schema, i, len(given))
            if one is not None:
                yield from self.node(one, item, (*loc, i), config, depth)

    def named_tuple(self, schema: Schema, given: object, loc: Loc, config: Schema, depth: int) -> Iterator[Finding]:
        """A NamedTuple's fields, by name from a table (pydantic itself refuses other keys there) or
        by position from an array."""
        fields = schema["fields"]
        if isinstance(given, Mapping):
            pairs = [(f["name"], f) for f in fields if f["name"] in given]
            yield from (y for key, f in pairs for y in self.node(f["schema"], given[key], (*loc, key), config, depth))
        elif isinstance(given, list | tuple):
            for i, (item, f) in enumerate(zip(given, fields, strict=False)):
                yield from self.node(f["schema"], item, (*loc, i), config, depth)

    def each_of(self, choices: list[Schema], given: object, loc: Loc, config: Schema, depth: int) -> Iterator[Finding]:
        """A union: which member pydantic chose is not known here, so a key is refused only when
        every member that could take ``given`` would drop it; the keys any of them reads are listed."""
        choices = [c for c in choices if self.may_take(c, given)]
        found = [{where: keys for where, keys in self.node(c, given, loc, config, depth)} for c in choices]
        if not found:
            return
        for where in found[0]:
            if all(where in each for each in found[1:]):
                yield where, tuple(dict.fromkeys(k for each in found for k in each[where]))

    def may_take(self, schema: Schema, given: object) -> bool:
        """Whether ``schema`` (seen through wrappers that keep its input) could validate ``given``:
        no table is an array, a string or a number, and no array a model or a table type."""
        for _ in range(_DEPTH):
            kind = schema.get("type")
            if kind == "definition-ref" and schema["schema_ref"] in self.refs:
                schema = self.refs[schema["schema_ref"]]
            elif kind in ("default", "nullable", "function-after"):
                schema = schema["schema"]
            else:
                break
        if isinstance(given, Mapping):
            return kind not in _NOT_A_TABLE
        if isinstance(given, list | tuple):
            return kind not in _NOT_AN_ARRAY and not (kind == "model" and not schema.get("root_model"))
        return True

    def tagged(self, schema: Schema, given: object, loc: Loc, config: Schema, depth: int) -> Iterator[Finding]:
        """A discriminated union: the member its tag names when the tag is a key of the table, else
        (a callable discriminator, a tag not found) as a plain union."""
        choices, tag = schema["choices"], schema.get("discriminator")
        if isinstance(tag, str):
            found, value = _resolve(given, (tag,))
            try:
                chosen = choices.get(value) if found else None
            except TypeError:  # an unhashable tag value
                chosen = None
            if isinstance(chosen, Mapping):
                yield from self.node(chosen, given, loc, config, depth)
                return
        yield from self.each_of([c for c in choices.values() if isinstance(c, Mapping)], given, loc, config, depth)


def _paths(name: str, alias: object, by_name: bool, by_alias: bool) -> list[Loc]:
    """The key paths pydantic reads a field under, in its order: its validation aliases (each a
    path into the table, e.g. ``AliasPath("a", 0)``) unless it validates by name alone, then its
    name when it has no alias or validates by name too. A key pydantic ignores is not among them."""
    if alias is None:
        return [(name,)]
    aliases: list[Loc] = [(alias,)] if isinstance(alias, str) else []
    if isinstance(alias, list) and alias:  # an AliasPath (keys and indexes), or AliasChoices (a list of them)
        aliases = [tuple(p) for p in alias if p] if isinstance(alias[0], list) else [tuple(alias)]
    return [*(aliases if by_alias else []), *([(name,)] if by_name else [])]


def _resolve(given: object, path: Loc) -> tuple[bool, object]:
    """``given`` followed down ``path`` (keys of tables, indexes of arrays), and whether it was there."""
    for step in path:
        in_table = isinstance(step, str) and isinstance(given, Mapping) and step in given
        in_array = isinstance(step, int) and isinstance(given, list | tuple) and -len(given) <= step < len(given)
        if in_table or in_array:
            given = given[step]  # type: ignore[index]
        else:
            return False, None
    return True, given


def _item_schema(schema: Schema, i: int, n: int) -> Schema | None:
    """The schema item ``i`` of ``n`` is validated with: a tuple's by position (its variadic item
    covering the middle), any other array's one ``items_schema``."""
    if schema["type"] != "tuple":
        one: Schema | None = schema.get("items_schema")
        return one
    items: list[Schema] = schema.get("items_schema") or []
    variadic = schema.get("variadic_item_index")
    if variadic is None:
        return items[i] if i < len(items) else None
    trailing = len(items) - variadic - 1
    if i < variadic:
        return items[i]
    return items[len(items) - (n - i)] if i >= n - trailing else items[variadic]
