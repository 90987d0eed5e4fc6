"""Keys of a settings table that a model left at pydantic's default ``extra`` would drop unread.

pydantic ignores a key it does not know unless the model says otherwise, so a mistyped key in a
plugin's ``[plugins.NAME]`` table would be dropped and the operator's setting never applied. A
model (or a nested one, or a base class) that sets ``extra`` itself is taken at its word; one that
leaves the default is held to its fields, as if it forbade unknown keys.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import AliasChoices, AliasPath, BaseModel, RootModel
from pydantic.fields import FieldInfo

__all__ = ["ignored_keys"]

Loc = tuple[int | str, ...]


def ignored_keys(value: BaseModel, given: Mapping[str, Any]) -> list[tuple[Loc, tuple[str, ...]]]:
    """Each key of ``given`` (the table ``value`` was validated from) dropped by a model that leaves
    ``extra`` at its default, nested tables (models, dicts and lists of models) included.

    A model that reshapes its input before validation (a ``before``/``wrap`` model validator) is
    not second-guessed, nor is a field with such a field validator.

    :returns: ``(path to the key, the keys that model accepts)`` pairs, in the table's order.
    """
    return list(_walk(value, given, ()))


def _walk(value: object, given: object, loc: Loc) -> Iterator[tuple[Loc, tuple[str, ...]]]:
    if isinstance(value, RootModel):
        yield from _walk(value.root, given, loc)
    elif isinstance(value, BaseModel):
        if isinstance(given, Mapping):
            yield from _model(value, given, loc)
    elif isinstance(value, Mapping) and isinstance(given, Mapping):
        for key, item in given.items():
            if key in value:
                yield from _walk(value[key], item, (*loc, key))
    elif isinstance(value, list | tuple) and isinstance(given, list | tuple) and len(value) == len(given):
        for i, (one, raw) in enumerate(zip(value, given, strict=True)):
            yield from _walk(one, raw, (*loc, i))


def _model(value: BaseModel, given: Mapping[str, Any], loc: Loc) -> Iterator[tuple[Loc, tuple[str, ...]]]:
    cls = type(value)
    decorators = cls.__pydantic_decorators__
    if any(d.info.mode in ("before", "wrap") for d in decorators.model_validators.values()):
        return  # it may consume or rename keys: what it was given is not what its fields read
    reshaped = {
        name
        for d in decorators.field_validators.values()
        if d.info.mode in ("before", "wrap", "plain")
        for name in d.info.fields
    }
    field_of = {key: name for name, field in cls.model_fields.items() for key in _keys(name, field)}
    if "extra" not in cls.model_config:  # pydantic's default: unknown keys dropped without a word
        accepted = tuple(dict.fromkeys(field_of))
        for key in given:
            if key not in field_of:
                yield (*loc, key), accepted
    for key, item in given.items():
        name = field_of.get(key)
        if name is not None and name not in reshaped:
            yield from _walk(getattr(value, name), item, (*loc, key))


def _keys(name: str, field: FieldInfo) -> list[str]:
    """The keys a table may give ``field`` under: its name, its alias, its validation aliases."""
    keys = [name]
    if field.alias:
        keys.append(field.alias)
    aliases = field.validation_alias
    choices = aliases.choices if isinstance(aliases, AliasChoices) else [aliases]
    for choice in choices:
        if isinstance(choice, str):
            keys.append(choice)
        elif isinstance(choice, AliasPath) and choice.path and isinstance(choice.path[0], str):
            keys.append(choice.path[0])
    return keys
