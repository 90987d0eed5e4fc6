"""Keys of a settings table that a model left at pydantic's default ``extra`` would drop unread.

pydantic ignores a key it does not know unless the model says otherwise, so a mistyped key in a
plugin's ``[plugins.NAME]`` table would be dropped and the operator's setting never applied. A
model (or a nested one, or a base class) that sets ``extra`` itself is taken at its word; one that
leaves the default is held to its fields, as if it forbade unknown keys.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeGuard, get_args, get_origin

from pydantic import AliasChoices, AliasPath, BaseModel, BeforeValidator, PlainValidator, WrapValidator
from pydantic.fields import FieldInfo

if TYPE_CHECKING:
    from pydantic import RootModel

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


def _is_root_model(value: object) -> TypeGuard[RootModel[Any]]:
    # A RootModel instance exists only once pydantic.root_model is imported: importing it here
    # would build RootModel's own schema at every start (issue 43), for settings that rarely use one.
    module = sys.modules.get("pydantic.root_model")
    return module is not None and isinstance(value, module.RootModel)


def _walk(value: object, given: object, loc: Loc) -> Iterator[tuple[Loc, tuple[str, ...]]]:
    if _is_root_model(value):
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
    reshaped |= {name for name, field in cls.model_fields.items() if _reshapes(field)}
    config = cls.model_config
    by_name = bool(config.get("validate_by_name") or config.get("populate_by_name"))
    by_alias = config.get("validate_by_alias", True) is not False
    field_of = {key: name for name, f in cls.model_fields.items() for key in _keys(name, f, by_name, by_alias)}
    if "extra" not in cls.model_config:  # pydantic's default: unknown keys dropped without a word
        accepted = tuple(dict.fromkeys(field_of))
        for key in given:
            if key not in field_of:
                yield (*loc, key), accepted
    for key, item in given.items():
        name = field_of.get(key)
        if name is not None and name not in reshaped:
            yield from _walk(getattr(value, name), item, (*loc, key))


def _keys(name: str, field: FieldInfo, by_name: bool, by_alias: bool) -> list[str]:
    """The keys pydantic reads ``field`` under: its validation aliases (else its alias) unless the
    model validates by name alone, and its name when it has no alias or the model validates by name
    too (``validate_by_name``/``populate_by_name``): a key pydantic ignores is not accepted here."""
    aliases: list[str] = []
    given = field.validation_alias if field.validation_alias is not None else field.alias
    for choice in given.choices if isinstance(given, AliasChoices) else [given]:
        if isinstance(choice, str):
            aliases.append(choice)
        elif isinstance(choice, AliasPath) and choice.path and isinstance(choice.path[0], str):
            aliases.append(choice.path[0])
    if given is None:
        return [name]
    return [*(aliases if by_alias else []), *([name] if by_name else [])]


_RESHAPING = (BeforeValidator, WrapValidator, PlainValidator)


def _reshapes(field: FieldInfo) -> bool:
    """Whether a validator attached with ``Annotated`` (on the field or inside its type, e.g.
    ``tuple[Annotated[Model, BeforeValidator(f)], ...]``) may read the field's value before its
    model does: what the table gave is then not what the model's fields read."""
    return any(isinstance(m, _RESHAPING) for m in field.metadata) or _annotated_reshaping(field.annotation, 0)


def _annotated_reshaping(tp: object, depth: int) -> bool:
    if depth > 8:
        return False
    if get_origin(tp) is Annotated and any(isinstance(m, _RESHAPING) for m in tp.__metadata__):  # type: ignore[attr-defined]
        return True
    return any(_annotated_reshaping(arg, depth + 1) for arg in get_args(tp))
