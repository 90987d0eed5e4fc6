"""How a config problem is told: pydantic errors as one line each, secrets masked, a close key
suggested."""

from __future__ import annotations

import re
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

__all__ = ["format_validation_error", "ignored_key_line", "known_keys", "mask", "suggestion"]


_SECRET_NAME = re.compile(
    r"pass|pwd|passwd|secret|token|api_?key|apikey|access_?key|credential|private|bearer|auth|cookie|session|"
    r"signature|sig$|salt|otp|pin$",
    re.IGNORECASE,
)
"""Keys whose values are never shown (matched anywhere in a field path, so ``passwrd`` and ``pwd`` count)."""
_USERINFO = re.compile(r"(?<=://)[^@\s'\"]*@")
"""``user:password@`` after a scheme, up to the last-but-one ``@``-free run (a password may hold ``/``)."""
_QUERY_VALUE = re.compile(r"([?&;][^=&#\s'\"]*=)[^&#\s'\"]*")
"""The value of every URL query parameter (``?token=abc`` -> ``?token=***``)."""
_PLAIN = {
    "Input should be a valid tuple": "Input should be a list",
    "Input should be a valid list": "Input should be a list",
}


def mask(text: str) -> str:
    """``text`` with URL user info and every URL query value replaced by ``***``."""
    if "://" not in text and "=" not in text:
        return text
    return _QUERY_VALUE.sub(r"\1***", _USERINFO.sub("***@", text))


_ECHOED = frozenset({"literal_error", "enum"})
"""Errors whose value is echoed: a word typed where one of a few choices belongs."""
_SHAPES: dict[type, str] = {str: "a string", list: "a list", tuple: "a list", bytes: "bytes"}


def _shown(loc: tuple[int | str, ...], value: object, kind: str) -> str:
    """`` (got <value>)`` for an error line, with secrets and user info never echoed."""
    if isinstance(value, dict):
        return ""
    if kind == "extra_forbidden":
        return " (value hidden: an unknown key may be a mistyped secret)"
    if any(_SECRET_NAME.search(str(part)) for part in loc):
        return " (value hidden: it may be a secret)"
    if not (isinstance(value, bool | int | float) or value is None or kind in _ECHOED):
        # a value of the wrong shape may be a secret pasted where its variable's name or a table belongs
        return f" (got {_SHAPES.get(type(value), 'a ' + type(value).__name__)})"
    text = mask(repr(value))
    if len(text) > 120:
        text = text[:117] + "..."
    return f" (got {text})"


def suggestion(name: str, candidates: Iterable[str], *, naming: bool = False) -> str:
    """``'; did you mean "<closest>"?'`` for the candidate closest to a misspelt ``name``
    (:func:`difflib.get_close_matches`, its default cutoff 0.6), or ``""`` when none is close.
    With ``naming`` (one of several misspelt names): ``'; did you mean "<closest>" for "<name>"?'``."""
    import difflib  # only for a misspelt key: serve's start-up does without it (issue 43)

    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1)
    if not close:
        return ""
    return f'; did you mean "{close[0]}" for "{name}"?' if naming else f'; did you mean "{close[0]}"?'


def _unwrap(annotation: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` -> ``X`` (a union of several types stays as it is)."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _step(annotation: Any, part: int | str) -> Any:
    """The type found one step (a field name, a list index, a table key) inside ``annotation``."""
    annotation = _unwrap(annotation)
    if _is_model(annotation):
        fields = annotation.model_fields
        field = fields.get(str(part)) or next((f for f in fields.values() if f.alias == part), None)
        return field.annotation if field is not None else None
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (list, tuple, set, frozenset, Sequence) and isinstance(part, int) and args:
        return args[0]
    if origin in (dict, Mapping) and len(args) == 2:
        return args[1]
    return None


def known_keys(model: type[BaseModel], loc: Sequence[int | str]) -> tuple[str, ...]:
    """The keys (field names and aliases) of the table at ``loc`` inside ``model``, read from the
    pydantic models themselves (so keys added later count), or ``()`` when no model is there.

    >>> "page_size" in known_keys(Config, ["server"])
    True
    """
    annotation: Any = model
    for part in loc:
        annotation = _step(annotation, part)
        if annotation is None:
            return ()
    annotation = _unwrap(annotation)
    if not _is_model(annotation):
        return ()
    return tuple(n for name, f in annotation.model_fields.items() for n in (name, f.alias) if n)


def format_validation_error(
    error: ValidationError, where: str, model: type[BaseModel] | None = None, *, accepted: bool = False
) -> str:
    """One line per field: ``<where>.<field path>: <message> (got <value>)``; a key ``model`` does
    not know ends with ``; did you mean "<key>"?`` when one of the table's keys is close, and with
    ``accepted`` also with ``; keys accepted here: <every key of that table>``.

    Never shown, because these lines reach logs: values under secret-looking names (password,
    pwd, secret, token, API key, auth ... anywhere in the path), values of keys the model does not
    know (a mistyped secret is still a secret), ``user:password@`` in a URL (also when the password
    holds ``/``) and every URL query value (``?token=***``), in values and in messages alike.
    """
    lines = []
    for item in error.errors(include_url=False):
        path = ".".join(str(p) for p in item["loc"])
        # Operators write TOML arrays, not tuples, and pydantic's "Value error," prefix says nothing.
        message = item["msg"].removeprefix("Value error, ").replace("Tuple should", "List should")
        message = mask(_PLAIN.get(message, message))
        value = item.get("input")
        shown = _shown(tuple(item["loc"]), value, item["type"])
        if "hidden" in shown and isinstance(value, str) and value:
            message = _without(message, value)  # a validator that quoted the hidden value
        hint = ""
        if item["type"] == "extra_forbidden" and model is not None and item["loc"]:
            keys = known_keys(model, item["loc"][:-1])
            hint = suggestion(str(item["loc"][-1]), keys) + (_accepted(keys) if accepted and keys else "")
        lines.append(f"{where}.{path}: {message}{shown}{hint}" if path else f"{where}: {message}")
    return "; ".join(lines)


def ignored_key_line(where: str, loc: Sequence[int | str], accepted: Sequence[str]) -> str:
    """The line for a key that a settings model left at pydantic's default ``extra`` would drop
    (:func:`~mcp_providers.config.ignored.ignored_keys`), worded like an unknown key's error."""
    path = ".".join(str(p) for p in loc)
    return (
        f"{where}.{path}: unknown key, which the settings model would ignore, so the setting would never apply "
        f"(value hidden: an unknown key may be a mistyped secret){suggestion(str(loc[-1]), accepted)}"
        f"{_accepted(accepted)}"
    )


def _accepted(keys: Iterable[str]) -> str:
    return f"; keys accepted here: {', '.join(sorted(set(keys))) or '(none)'}"


def _without(message: str, value: str) -> str:
    """``message`` with ``value`` hidden where it is quoted, or anywhere when it is long enough that
    hiding it cannot cut ordinary words apart (a one-letter value would turn "Extra" into "E***tra"
    and so reveal itself)."""
    for quoted in (repr(value), f"'{value}'", f'"{value}"'):
        message = message.replace(quoted, "'***'")
    return message.replace(value, "***") if len(value) >= 6 else message
