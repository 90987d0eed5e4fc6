"""A declaration pydantic refused, told as what was wrong and what would be right.

A declaration model (:mod:`mcp_providers.models`) that fails validation keeps raising pydantic's
``ValidationError``, with one note added (:func:`explain`): which declaration (``tool 'look up'``),
each field that failed with its value cut short, and the allowed values or the rule in words.
``check`` and the plugin reports show that note (:func:`described`) instead of pydantic's text.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

NOTE = "invalid declaration: "
"""How the note :func:`explain` writes begins (so :func:`described` finds it among others)."""

_KINDS = {"ResourceTemplate": "template", "PromptArgument": "prompt argument", "ExtensionMethod": "extension method"}
_IDENTITY = ("uri_template", "uri", "name", "identifier", "src")
"""The fields that say which declaration it is, first found first."""
_NAME_RULE = "1 to 128 characters from A-Z a-z 0-9 _ . - (no spaces or other punctuation)"
_RULES = {
    r"^[A-Za-z0-9_.-]{1,128}$": _NAME_RULE,
    r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9_.-]+)+$": (
        "'<vendor prefix>/<name>' such as 'io.example/search': letters, digits, _ . - and at least one /"
    ),
}
"""Patterns of the declaration models, in words."""
_EFFECT_WORDS = {
    "none": ("read-only", "readonly", "read_only", "read", "safe", "readonlyhint", "no"),
    "additive": ("create", "creates", "add", "append", "insert", "write", "writes", "post"),
    "destructive": ("delete", "deletes", "remove", "overwrite", "update", "destroy", "put", "patch"),
}


def explain(error: ValidationError, model: type[BaseModel], given: Mapping[str, Any]) -> str:
    """``invalid declaration: <kind> '<id>': <field> <value> <what is wrong>; <what would be right>``
    for each error of ``error``, raised building ``model`` from ``given`` (its keyword arguments)."""
    kind = _KINDS.get(model.__name__, model.__name__.lower())
    ident = next((given[k] for k in _IDENTITY if isinstance(given.get(k), str) and given[k]), None)
    who = f"{kind} {_cut(ident)}" if ident is not None else f"a {kind}"
    lines = [_line(model, item) for item in error.errors(include_url=False)]
    return f"{NOTE}{who}: {'; '.join(lines)}"


def described(error: BaseException) -> str | None:
    """The note :func:`explain` added to ``error``, or ``None`` (not a declaration's error)."""
    notes = getattr(error, "__notes__", None) or ()
    return next((n for n in notes if isinstance(n, str) and n.startswith(NOTE)), None)


def _line(model: type[BaseModel], item: Any) -> str:
    loc: tuple[int | str, ...] = tuple(item["loc"])
    field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "the declaration"
    kind, ctx, value = item["type"], item.get("ctx") or {}, item.get("input")
    if kind == "extra_forbidden":
        fields = _fields(model, loc[:-1])
        import difflib  # only for a refused declaration: serve's start-up does without it (issue 43)

        close = difflib.get_close_matches(str(loc[-1]), fields, n=1)
        hint = f'; did you mean "{close[0]}"?' if close else ""
        return f"{field} is not a field{hint} (fields: {', '.join(fields) or '(none)'})"
    if kind == "missing":
        return f"{field} is required"
    if kind == "string_pattern_mismatch":
        rule = _RULES.get(str(ctx.get("pattern")), f"the pattern {ctx.get('pattern')}")
        return f"{field} {_cut(value)} does not fit the rule: {rule}"
    if kind == "literal_error":
        return f"{field} {_cut(value)} is not one of {ctx.get('expected')}{_synonym(loc, value)}"
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return f"{field} must not be empty"
    message = item["msg"].removeprefix("Value error, ").replace("Input should be", "should be")
    return f"{field} {_cut(value)}: {message}"


def _synonym(loc: Sequence[int | str], value: object) -> str:
    """For an effects word from elsewhere (``read-only``, ``delete``): the effects it means here."""
    if not (loc and loc[-1] in ("effects", "side_effects") and isinstance(value, str)):
        return ""
    word = re.sub(r"\s+", "-", value.strip().lower())
    for effects, words in _EFFECT_WORDS.items():
        if word in words:
            return " (read-only is 'none')" if effects == "none" else f" ({value!r} reads as {effects!r})"
    return " ('none' is read-only, 'additive' creates or appends, 'destructive' may overwrite or delete)"


def _cut(value: object) -> str:
    """``value`` as it would be written, at most 60 characters; a table or list only by its type."""
    if isinstance(value, dict | list | tuple | set):
        return f"(a {type(value).__name__})"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fields(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The fields of the model found at ``loc`` inside ``model`` (list items and ``X | None`` looked through)."""
    annotation: Any = model
    for part in loc:
        annotation = _model_in(annotation)
        if annotation is None:
            return []
        if isinstance(part, str):
            field = annotation.model_fields.get(part)
            if field is None:
                return []
            annotation = field.annotation
    found = _model_in(annotation)
    return sorted(found.model_fields) if found is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The one model ``annotation`` holds (``M``, ``M | None``, ``tuple[M, ...]``, ``Annotated[M, ...]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin in (Annotated, Union, types.UnionType, tuple, list):
        found = {m for a in get_args(annotation) if a is not type(None) and a is not ... for m in [_model_in(a)] if m}
        return found.pop() if len(found) == 1 else None
    return None
