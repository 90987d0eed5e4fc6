"""The per-function adapters of the decorator API (:mod:`mcp_providers.plugin`): what a decorated
resource, template, completion, tool or prompt function is called through at request time, each
made once, at composition, from the function's signature (:mod:`mcp_providers._decorated`)."""

from __future__ import annotations

import contextlib
import enum
import inspect
import typing
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from mcp_providers import _decorated as fx
from mcp_providers._invalid import described
from mcp_providers.errors import NotFound
from mcp_providers.providers import (
    CompletionRequest,
    Content,
    ReadRequest,
    ToolCall,
    ToolResult,
)


def doc_of(function: Callable[..., Any]) -> str | None:
    doc = inspect.getdoc(function)
    return doc.strip() if doc else None


class Reader:
    """One resource function, ready to serve reads."""

    __slots__ = ("bind", "call", "mime", "where")

    def __init__(
        self, sig: fx.Signature, settings: Any, convert: Mapping[str, Any], mime: str | None, *, direct: bool = False
    ) -> None:
        # direct: the template's values are exactly the parameters, as text; they are passed as they are.
        self.bind = _as_given if direct else fx.binder(sig, settings, convert)
        self.call = fx.caller(sig)
        self.mime = mime
        self.where = sig.where

    async def __call__(self, request: ReadRequest) -> Content:
        try:
            result = await self.call(self.bind(request.params, request, request.principal))
        except NotFound as exc:
            if exc.data is None:  # MCP's not-found carries the URI (data.uri)
                exc.data = {"uri": request.requested_uri or request.uri}
            raise
        if isinstance(result, str):
            return Content(text=result)
        if isinstance(result, Content):
            return result
        content = fx.to_content(result, self.where)  # str and Content returned above: bytes or JSON here
        if content.text is not None and not self.mime:
            return Content(text=content.text, mime_type=fx.JSON)
        return content


def _as_given(values: Mapping[str, Any], request: Any, principal: Any) -> Mapping[str, Any]:
    return values


def takes_values_as_given(sig: fx.Signature, uri_template: str, convert: Mapping[str, Any]) -> bool:
    """Whether a template's values can go to the function as they are: only text parameters, one per
    path variable, no query variables (they may be absent), no Context or settings."""
    if sig.context or sig.settings or any(convert.values()):
        return False
    parsed = _parsed(uri_template)
    if parsed is None or parsed.query_variable_names:
        return False
    names = sorted(p.name for p in sig.values)
    return names == sorted(parsed.variable_names) == sorted(sig.required())


class Completer:
    __slots__ = ("bind", "call", "variable", "where")

    def __init__(self, sig: fx.Signature, variable: str, settings: Any) -> None:
        self.bind = fx.binder(sig, settings, {})
        self.call = fx.caller(sig)
        self.variable = variable
        self.where = sig.where

    async def __call__(self, request: CompletionRequest) -> list[str]:
        values = {**request.context, self.variable: request.value}
        result = await self.call(self.bind(values, request, request.principal))
        if isinstance(result, str) or not isinstance(result, Sequence) or not all(isinstance(v, str) for v in result):
            raise TypeError(f"{self.where} returned {type(result).__name__}; a completion returns a list of str")
        return list(result)


def _parsed(uri_template: str) -> Any:
    """The SDK's parse of ``uri_template`` (an ``mcp.UriTemplate``), or ``None`` when it is invalid:
    the grammar rule of ``check`` reports that, with the template."""
    # Imported here: importing the SDK costs about a second, and a plugin module imports this one
    # while `plugins` and `check` start; by the first composition the SDK is loaded anyway.
    from mcp.shared.uri_template import UriTemplate

    try:
        return UriTemplate.parse(uri_template)
    except Exception:
        return None


def template_variables(uri_template: str) -> set[str] | None:
    """The template's variable names; ``None`` when it is invalid (``check`` says so, by its rule)."""
    parsed = _parsed(uri_template)
    return None if parsed is None else set(parsed.variable_names)


def fixed_parameters(sig: fx.Signature, uri: str, plugin: str) -> None:
    """:raises DeclarationError: the function of fixed resource ``uri`` requires a parameter: it
    would never be given one (the message says to use a template when ``uri`` has a variable)."""
    required = sorted(sig.required())
    if not required:
        return
    if "{" in uri:
        raise fx.DeclarationError(
            f"{sig.where}: {uri!r} has a variable, and @{plugin}.resource declares a fixed URI (none); "
            f"declare it with @{plugin}.template({uri!r}) instead"
        )
    raise fx.DeclarationError(
        f"{sig.where}: a fixed resource ({uri!r}) has no variables, yet the function requires "
        f"{', '.join(required)}; declare it with @{plugin}.template and a variable each"
        + (", or annotate a context parameter Context" if set(required) & set(sig.unannotated_context) else "")
    )


Advice = tuple[str, str, str, str]
"""``(code, value, message, fix)``: what ``check`` warns about one decorated function (it still
serves). The decorator API's providers list theirs in an ``authoring_advice`` attribute."""

_SAYS_NOTHING = (Any, object)


AS_TEXT = "the text as sent (a str)"
"""What an unannotated template variable or prompt argument receives."""
UNTYPED = "any JSON value (its inputSchema says nothing of it)"
"""What an unannotated tool argument receives."""


def advice(sig: fx.Signature, declared: str, receives: Collection[str] = (), offered: str = AS_TEXT) -> list[Advice]:
    """What ``check`` warns about ``sig``'s function, declared as ``declared`` (a tool or prompt
    name, a URI or template): a parameter named ``ctx`` or ``context``, unannotated, which the
    caller is asked for; and the other unannotated parameters named in ``receives`` (those given a
    value: a template's variables, a tool's or prompt's arguments), which get ``offered``."""
    found: list[Advice] = [
        (
            "context-unannotated",
            declared,
            f"{sig.where}: parameter {name!r} is not annotated, so it is offered to the model as an argument "
            f"({offered}) instead of receiving the request's Context",
            f"annotate it {name}: Context (from mcp_providers.plugin import Context), or its type if the caller is "
            "meant to give it",
        )
        for name in sig.unannotated_context
    ]
    bare = [p.name for p in sig.values if p.name in receives and p.name not in sig.hints]
    if unnamed := [name for name in bare if name not in sig.unannotated_context]:
        found.append(
            (
                "parameter-unannotated",
                declared,
                f"{sig.where}: parameter(s) {', '.join(map(repr, unnamed))} are not annotated, so each receives "
                f"{offered}, converted to nothing",
                f"annotate each with the type it takes ({unnamed[0]}: int, str, a Literal or a model), or Any to take "
                "any value on purpose",
            )
        )
    return found


def tool_advice(sig: fx.Signature, tool: str, typed_output: bool) -> list[Advice]:
    """:func:`advice` (its arguments untyped), and for a tool whose return annotation is ``Any`` or
    ``object`` (unless ``typed_output``: an ``output_model=`` was given): its outputSchema says
    nothing of the result, and a value JSON cannot carry fails only when called."""
    found = advice(sig, tool, [p.name for p in sig.values], UNTYPED)
    returns = fx.bare(sig.returns)
    if not typed_output and any(returns is vague for vague in _SAYS_NOTHING):
        found.append(
            (
                "output-schema-says-nothing",
                tool,
                f"{sig.where} is annotated -> {getattr(returns, '__name__', 'Any')}: its outputSchema says nothing "
                "of the result, and a value JSON cannot carry fails only when the tool is called",
                "annotate what it returns (a pydantic model, dict[str, int], list[str] ...), or -> str for text",
            )
        )
    return found


def template_parameters(sig: fx.Signature, uri_template: str) -> None:
    """:raises DeclarationError: a variable without a parameter, a required parameter without a
    variable, or a parameter annotated with a type no text converts to."""
    variables = template_variables(uri_template)
    if variables is None:
        return
    names = {p.name for p in sig.values}
    missing = sorted(variables - names)
    if missing:
        raise fx.DeclarationError(
            f"{sig.where}: template {uri_template!r} has variable(s) {', '.join(missing)} but the function has no "
            f"parameter of that name; {_renames(missing, names - variables) or 'add'} "
            f"{', '.join(f'{m}: str' for m in missing)} to its parameters"
        )
    extra = sorted(sig.required() - variables)
    if extra:
        raise fx.DeclarationError(
            f"{sig.where}: parameter(s) {', '.join(extra)} receive nothing, since template {uri_template!r} has no "
            f"variable of that name; add {{{extra[0]}}} to the template, give the parameter a default, or annotate "
            "it Context"
        )
    fx.text_values(sig, "template", uri_template, only=variables)


def spelled_defaults(sig: fx.Signature, uri_template: str) -> dict[str, str]:
    """Each template variable's default as a URI spells it (``True`` is ``"true"``), for those with
    a default of one spelling (a str, an int, a float, a bool, or an Enum of a str or int value)."""
    variables = template_variables(uri_template) or set()
    found: dict[str, str] = {}
    for parameter in sig.values:
        value = parameter.default
        value = value.value if isinstance(value, enum.Enum) else value
        if parameter.name not in variables or value is inspect.Parameter.empty:
            continue
        if isinstance(value, bool):
            found[parameter.name] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            found[parameter.name] = str(value)
    return found


def _renames(missing: Sequence[str], unused: set[str]) -> str:
    """``"rename date to day, or add"`` for a variable spelled near an unused parameter; ``""`` if none is."""
    import difflib  # only when a declaration is refused: serve's start-up does not load it (issue 43)

    for variable in missing:
        near = difflib.get_close_matches(variable.lower(), {n.lower(): n for n in unused}, n=1, cutoff=0.5)
        if near:
            shown = next(n for n in unused if n.lower() == near[0])
            return f"rename parameter {shown} to {variable} (or the variable to {shown}), or add"
    return ""


def resource_fields(function: Callable[..., Any], sig: fx.Signature, fields: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(fields)
    out.setdefault("name", function.__name__)
    if "description" not in out and doc_of(function):
        out["description"] = doc_of(function)
    if "mime_type" not in out:
        out["mime_type"] = fx.mime_for(sig.returns)
    return out


class ToolCaller:
    __slots__ = ("bind", "call", "model", "where", "wrapped")

    def __init__(self, sig: fx.Signature, settings: Any, model: type[BaseModel] | None, wrapped: bool) -> None:
        self.bind = fx.binder(sig, settings, {})
        self.call = fx.caller(sig)
        self.model, self.wrapped, self.where = model, wrapped, sig.where

    async def __call__(self, call: ToolCall) -> ToolResult:
        result = await self.call(self.bind(call.arguments.__dict__, call, call.principal))
        return fx.to_tool_result(result, self.model, self.wrapped, self.where)


class PromptRenderer:
    __slots__ = ("bind", "call", "where")

    def __init__(self, sig: fx.Signature, settings: Any) -> None:
        self.bind = fx.binder(sig, settings, {p.name: fx.converter(sig, p.name) for p in sig.values})
        self.call = fx.caller(sig)
        self.where = sig.where


@contextlib.contextmanager
def declaring(where: str) -> Iterator[None]:
    """:raises DeclarationError: a declaration built inside is invalid; the message names the
    function ``where`` and says what was wrong and what would be right (never pydantic's text)."""
    try:
        yield
    except ValidationError as exc:
        raise fx.DeclarationError(f"{where}: {described(exc) or exc}") from None


def known(
    found: Iterator[tuple[str, Completer]], names: Collection[str] | None, what: str
) -> Iterator[tuple[str, Completer]]:
    """``found`` completers, each of a variable or argument ``what`` has.

    :raises DeclarationError: one completes a name ``what`` does not have (it would never be asked).
    """
    for variable, completer in found:
        if names is not None and variable not in names:
            raise fx.DeclarationError(
                f"{completer.where}: .complete({variable!r}) on {what}, which has no {variable!r}; "
                f"complete one of its {'variables' if what.startswith('template') else 'arguments'}: "
                f"{', '.join(sorted(names)) or '(none)'}"
            )
        yield variable, completer


def prompt_links(where: str, fields: Mapping[str, Any], names: Sequence[str]) -> dict[str, str]:
    """A decorated prompt's ``argument_resources``: argument -> the template its value names.

    :raises DeclarationError: ``arguments=`` is given (the parameters are the arguments), or a
        link names no parameter.
    """
    if "arguments" in fields:
        raise fx.DeclarationError(
            f"{where}: @prompt(arguments=...): a decorated prompt's arguments are its parameters; link one to "
            'the resource its value names with argument_resources={"name": "myplugin://things/{name}"}'
        )
    links = dict(fields.get("argument_resources") or {})
    for argument in links:
        if argument not in names:
            raise fx.DeclarationError(
                f"{where}: argument_resources: {argument!r} is not an argument of the prompt; it takes: "
                f"{', '.join(names) or 'none'}"
            )
    return links


def literal_values(sig: fx.Signature) -> dict[str, tuple[str, ...]]:
    """Each value parameter annotated ``Literal`` of strings (or a ``str`` ``Enum``) -> its values,
    for ``check``'s ``prompt-enum-unlinked``."""
    found: dict[str, tuple[str, ...]] = {}
    for p in sig.values:
        hint = sig.hints.get(p.name)
        if typing.get_origin(hint) is typing.Literal:
            values = typing.get_args(hint)
        elif isinstance(hint, type) and issubclass(hint, enum.Enum):
            values = tuple(m.value for m in hint)
        else:
            continue
        if values and all(isinstance(v, str) for v in values):
            found[p.name] = values
    return found
