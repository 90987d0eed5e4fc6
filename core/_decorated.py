"""Decorated functions as providers: each function's signature read once, at composition, into a
small adapter that the request-time code calls like any hand-written provider method.

What an adapter does per request is fixed when the plugin is composed: which parameters receive
template variables, tool arguments or prompt arguments, which one receives the :class:`Context`,
which the plugin's settings, how a value is converted, and how the return value becomes a
:class:`~mcp_providers.providers.Content`, :class:`~mcp_providers.providers.ToolResult` or list of
:class:`~mcp_providers.providers.Message`. A plain (non-``async``) function runs in a worker thread,
which inherits the request's context variables, so the side-effect scope, the gate and the
receipts hold for it as for a coroutine; it counts against the server's bound on provider threads
until it returns, even after its request was answered (:mod:`mcp_providers._threads`).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Any

import pydantic_core
from pydantic import BaseModel, TypeAdapter, ValidationError, create_model

from mcp_providers import _spellings, _threads, credentials, policy
from mcp_providers._holders import Frozen
from mcp_providers._returns import may_be_non_finite, non_finite, unawaited, unservable
from mcp_providers._sideeffects import in_scope
from mcp_providers.credentials import Credential, Upstream
from mcp_providers.errors import InvalidParams
from mcp_providers.identity import Principal
from mcp_providers.policy import Action
from mcp_providers.providers import (
    ClientChannel,
    CompletionRequest,
    Content,
    Elicited,
    LogLevel,
    Message,
    ReadRequest,
    Sampled,
    ToolCall,
    ToolResult,
)

Request = ReadRequest | ToolCall | CompletionRequest | None
_NO_CHANNEL = ClientChannel()


class Context:
    """The request a decorated function serves. Give a function a parameter annotated ``Context``
    to receive it (resources, templates, completions, tools and prompts alike)::

        @notes.tool()
        async def archive(note: str, ctx: Context) -> str:
            ctx.require("read", f"notes://all/{note}")
            await ctx.progress(1, 2)
            ...

    :ivar principal: who is asking (:class:`~mcp_providers.identity.Principal`; ``local`` on stdio).
    :ivar request: the underlying :class:`~mcp_providers.providers.ReadRequest`,
        :class:`~mcp_providers.providers.ToolCall` or
        :class:`~mcp_providers.providers.CompletionRequest`; ``None`` for a prompt.
    """

    __slots__ = ("_asked_by", "principal", "request")

    def __init__(self, principal: Principal, request: Request, asked_by: str) -> None:
        self.principal = principal
        self.request = request
        self._asked_by = asked_by

    @property
    def subject(self) -> str:
        """``principal.subject`` (unique only within ``principal.issuer``)."""
        return self.principal.subject

    def require(self, action: Action, target: str) -> None:
        """Ask the policy about data this function touches (see :meth:`ToolCall.require
        <mcp_providers.providers.ToolCall.require>`).

        :raises mcp_providers.errors.Denied: the policy refuses (the client gets -32003).
        """
        policy.require(action, target, asked_by=self._asked_by)

    async def credential(self, upstream: Upstream) -> Credential:
        """The caller's credential for ``upstream`` from the server's broker (cached per issuer,
        subject and upstream), recorded in the receipt.

        :raises ~mcp_providers.credentials.CredentialRefused: the upstream will not grant one.
        """
        return await credentials.credential_for(upstream, self.principal)

    async def forget_credential(self, upstream: Upstream, stale: Credential | None = None) -> None:
        """Drop the caller's cached credential for ``upstream`` after the upstream rejected it."""
        await credentials.forget_for(upstream, self.principal, stale)

    @property
    def _channel(self) -> ClientChannel:
        return self.request.channel if isinstance(self.request, ToolCall) else _NO_CHANNEL

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress (tools; a no-op elsewhere)."""
        await self._channel.progress(progress, total, message)

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send the client a log message (tools; a no-op elsewhere).

        :raises ValueError: ``level`` is not an MCP log level.
        """
        await self._channel.log(level, data, logger)

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> Elicited:
        """Ask the user to fill in a form (tools only; see :meth:`ToolCall.elicit
        <mcp_providers.providers.ToolCall.elicit>`).

        :raises ~mcp_providers.errors.ToolFailure: the client cannot be asked, or this is not a tool.
        """
        return await self._channel.elicit(message, schema)

    async def sample(self, prompt: str, *, max_tokens: int, system_prompt: str | None = None) -> Sampled:
        """Ask the client's model for a completion (tools only; see :meth:`ToolCall.sample
        <mcp_providers.providers.ToolCall.sample>`).

        :raises ~mcp_providers.errors.ToolFailure: the client cannot be asked, or this is not a tool.
        """
        return await self._channel.sample(prompt, max_tokens=max_tokens, system_prompt=system_prompt)


class DeclarationError(ValueError):
    """A decorated function cannot be declared as written; the message names the function and the fix."""


# -- reading a signature ---------------------------------------------------------------------------


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Signature(Frozen):
    """One function's parameters, sorted by what they receive."""

    __slots__ = (
        "context",
        "function",
        "hints",
        "is_async",
        "returns",
        "settings",
        "unannotated_context",
        "values",
        "where",
    )

    function: Callable[..., Any]
    where: str
    """``"function notes.index"``: how messages name it."""
    values: tuple[inspect.Parameter, ...]
    """Parameters that receive request values (template variables, arguments)."""
    hints: Mapping[str, Any]
    context: str | None
    settings: str | None
    returns: Any
    is_async: bool
    unannotated_context: tuple[str, ...]
    """Value parameters named like a Context (``ctx``, ``context``) but not annotated: ``check`` warns."""

    def __init__(
        self,
        function: Callable[..., Any],
        where: str,
        values: tuple[inspect.Parameter, ...],
        hints: Mapping[str, Any],
        context: str | None,
        settings: str | None,
        returns: Any,
        is_async: bool,
        unannotated_context: tuple[str, ...] = (),
    ) -> None:
        object.__setattr__(self, "function", function)
        object.__setattr__(self, "where", where)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "hints", hints)
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "returns", returns)
        object.__setattr__(self, "is_async", is_async)
        object.__setattr__(self, "unannotated_context", unannotated_context)

    def required(self) -> set[str]:
        return {p.name for p in self.values if p.default is inspect.Parameter.empty}


def describe(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", None) or "?"
    return f"function {module}.{getattr(function, '__qualname__', repr(function))}"


def bare(hint: Any) -> Any:
    """``Annotated[X, ...]`` -> ``X``."""
    return typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint


def signature(function: Callable[..., Any], settings_model: type[BaseModel] | None) -> Signature:
    """Read ``function``'s parameters once.

    :raises DeclarationError: ``function`` is no function or method (a ``functools.partial``, a
        callable object), an annotation cannot be resolved, the function takes ``*args`` or
        ``**kwargs``, is a generator function, or a parameter is annotated with another framework's
        ``Context``.
    """
    where = describe(function)
    if (why := unservable(function)) is not None:
        raise DeclarationError(f"{where}: {why}")
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as exc:
        raise DeclarationError(
            f"{where}: its annotations cannot be resolved ({type(exc).__name__}: {exc}); "
            "import the names they use at module level"
        ) from None
    values, context, settings = [], None, None
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            stars = "*" if parameter.kind is inspect.Parameter.VAR_POSITIONAL else "**"
            raise DeclarationError(f"{where}: {stars}{parameter.name} cannot be declared; name each parameter")
        hint = _unoptional(bare(hints.get(parameter.name, str)))
        if isinstance(hint, type) and issubclass(hint, Context):
            context = parameter.name
        elif getattr(hint if isinstance(hint, type) else typing.get_origin(hint), "__name__", None) == "Context":
            raise DeclarationError(
                f"{where}: parameter {parameter.name!r} is annotated {getattr(hint, '__module__', '?')}.Context, "
                "which the decorators do not pass (it would be asked of the caller); annotate it with ours: "
                "from mcp_providers.plugin import Context"
            )
        elif settings_model is not None and (hint is settings_model or parameter.name == "settings"):
            settings = parameter.name
        elif parameter.name == "settings":  # else a value the caller (the model) would supply
            raise DeclarationError(
                f"{where}: a parameter named settings receives the plugin's settings, and this plugin has no "
                "settings model; give the Plugin one (Plugin(..., settings=Model)) or rename the parameter"
            )
        else:
            values.append(parameter)
    return Signature(
        function,
        where,
        tuple(values),
        hints,
        context,
        settings,
        hints.get("return", inspect.Signature.empty),
        inspect.iscoroutinefunction(function),
        tuple(p.name for p in values if p.name.lower() in _CONTEXT_NAMES and p.name not in hints),
    )


def _unoptional(hint: Any) -> Any:
    """``X | None`` -> ``X`` (``ctx: Context | None = None`` receives the Context too)."""
    args = () if isinstance(hint, type) else typing.get_args(hint)  # a plain type: no typing look-ups
    optional = len(args) == 2 and type(None) in args and typing.get_origin(hint) in (typing.Union, types.UnionType)
    return next(a for a in args if a is not type(None)) if optional else hint


_CONTEXT_NAMES = frozenset({"ctx", "context"})
"""Names a parameter meant to receive the :class:`Context` is given (``check`` warns when unannotated)."""


_TEXT_TYPES = frozenset({"string", "integer", "number", "boolean"})
"""JSON Schema types a text value converts to (pydantic's lax mode: ``"3"`` -> 3, ``"true"`` -> True)."""
_WHY_TEXT = {
    "prompt": ("argument", "MCP prompt arguments are strings (the spec's PromptArgument)"),
    "template": ("variable", "URI template variables are strings"),
}


def text_values(sig: Signature, kind: str, owner: str, only: Collection[str] | None = None) -> None:
    """Check that each value parameter of a prompt or template (``kind``; with ``only``, those
    named there: a template's variables) takes text.

    :raises DeclarationError: one is annotated with a type no text converts to (``list``, ``dict``,
        a model), so every render or read would fail; the message names it and what to write.
    """
    what, why = _WHY_TEXT[kind]
    for parameter in sig.values:
        hint = sig.hints.get(parameter.name)
        if hint is None or (only is not None and parameter.name not in only) or _takes_text(hint):
            continue
        shown = getattr(hint, "__name__", None) if isinstance(hint, type) else None
        raise DeclarationError(
            f"{sig.where}: {kind} {owner!r}: {what} {parameter.name!r} is annotated {shown or hint}, which no text "
            f"converts to, so it could never be given: {why}; annotate it str, or a type text converts to (int, "
            "float, bool, a Literal or an Enum), and parse a list or table from the text in the function"
        )


def _takes_text(hint: Any) -> bool:
    try:
        schema = TypeAdapter(hint).json_schema()
    except Exception:  # no JSON Schema (an arbitrary class): not judged here; a failed conversion names it
        return True
    return _schema_takes_text(schema, schema.get("$defs", {}), 0)


def _schema_takes_text(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> bool:
    ref = schema.get("$ref")
    if isinstance(ref, str) and depth < 32:
        return _schema_takes_text(defs.get(ref.rsplit("/", 1)[-1], {}), defs, depth + 1)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return any(_schema_takes_text(b, defs, depth + 1) for b in branches)
    kind = schema.get("type")
    if kind is None or "enum" in schema or "const" in schema:  # Any, or a choice of words
        return True
    return any(k in _TEXT_TYPES for k in (kind if isinstance(kind, list) else [kind]))


def converter(sig: Signature, name: str, one_spelling: bool = False) -> Callable[[str], Any] | None:
    """How a text value (template variable, prompt argument) becomes parameter ``name``'s type, or
    ``None`` when it takes the text as it is; ``one_spelling`` for template variables (see
    :func:`mcp_providers._spellings.converter`)."""
    return _spellings.converter(sig.hints.get(name), name, one_spelling)


# -- calling ---------------------------------------------------------------------------------------

Call = Callable[[Mapping[str, Any]], Awaitable[Any]]


def caller(sig: Signature) -> Call:
    """``await call(kwargs)``: the function awaited when it is a coroutine function; a plain
    function runs in a worker thread (context variables go with it; at the deadline the request
    is answered and the thread is abandoned, but counts against ``[server.limits]
    provider_threads`` until the function returns: see :mod:`mcp_providers._threads`).

    :raises TypeError: the function returned a coroutine or generator object (names the function).
    """
    function, where = sig.function, sig.where
    if sig.is_async:

        async def awaited(kwargs: Mapping[str, Any]) -> Any:
            result = await function(**kwargs)
            unawaited(result, where)  # `return helper()` for `return await helper()`
            return result

        return awaited

    async def in_thread(kwargs: Mapping[str, Any]) -> Any:
        result = await _threads.run_sync(partial(in_scope, partial(function, **kwargs)), where)  # its thread: one step
        unawaited(result, where)  # a plain function returning a coroutine: no static sign of it
        return result

    return in_thread


Binder = Callable[[Mapping[str, Any], "Request", Principal], Mapping[str, Any]]


def binder(sig: Signature, settings: Any, convert: Mapping[str, Callable[[str], Any] | None]) -> Binder:
    """``bind(values, request, principal)`` -> the keyword arguments of one call.

    :raises InvalidParams: a required value is missing or does not convert.
    """
    names = [p.name for p in sig.values]
    required = sig.required()
    context, settings_name, where = sig.context, sig.settings, f"{sig.where}"

    def bind(values: Mapping[str, Any], request: Request, principal: Principal) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for name in names:
            if name in values:
                value = values[name]
                change = convert.get(name)
                kwargs[name] = change(value) if change is not None and isinstance(value, str) else value
            elif name in required:
                raise InvalidParams(f"missing value for {name!r}")
        if context is not None:
            kwargs[context] = Context(principal, request, where)
        if settings_name is not None:
            kwargs[settings_name] = settings
        return kwargs

    return bind


# -- results ---------------------------------------------------------------------------------------

JSON = "application/json"


def mime_for(returns: Any) -> str | None:
    """The MIME type a return annotation implies: ``str`` text, ``bytes`` binary, JSON otherwise."""
    hint = bare(returns)
    if hint is inspect.Signature.empty or hint is Content or hint is None:
        return None
    if hint is str:
        return "text/plain"
    if hint in (bytes, bytearray):
        return "application/octet-stream"
    return JSON


def to_content(result: Any, where: str) -> Content:
    """A read's return value as :class:`Content`: ``str`` text, ``bytes`` a blob, a pydantic model
    or any JSON-able value JSON text.

    :raises TypeError: the value is not JSON-serializable (names the function).
    """
    if isinstance(result, Content):
        return result
    if isinstance(result, str):
        return Content(text=result)
    if isinstance(result, bytes | bytearray):
        return Content(blob=bytes(result))
    if isinstance(result, BaseModel):
        return Content(text=result.model_dump_json())
    try:
        text = pydantic_core.to_json(result).decode()
    except pydantic_core.PydanticSerializationError as exc:
        raise TypeError(
            f"{where} returned {type(result).__name__}, which is not JSON-serializable ({exc}); "
            "return str, bytes, a dict/list of JSON values, a pydantic model or Content"
        ) from None
    if may_be_non_finite(text) and (at := non_finite(pydantic_core.to_jsonable_python(result))) is not None:
        raise TypeError(  # pydantic writes NaN, which is not JSON: a client's parser refuses the text
            f"{where} returned a non-finite number (NaN or Infinity) at {at}, which JSON cannot carry; "
            "return a finite number, or None"
        )
    return Content(text=text)


def output_model(sig: Signature, tool: str) -> tuple[type[BaseModel] | None, bool]:
    """A tool's output model from its return annotation, and whether results are wrapped as
    ``{"result": value}`` (MCP's structured content is a JSON object).

    ``str``, ``None``, ``ToolResult`` and no annotation give no output model.
    """
    hint = sig.returns
    plain = bare(hint)
    if plain in (inspect.Signature.empty, None, type(None), str, ToolResult):
        return None, False
    if isinstance(plain, type) and issubclass(plain, BaseModel):
        return plain, False
    wrapped = create_model(f"{_camel(tool)}Output", result=(hint, ...))
    return wrapped, True


def to_tool_result(result: Any, model: type[BaseModel] | None, wrapped: bool, where: str) -> ToolResult:
    """A tool's return value as :class:`ToolResult`.

    :raises TypeError: a value that does not match the output model (names the function).
    """
    if isinstance(result, ToolResult):
        return result
    if model is None:
        if result is None:
            return ToolResult()
        if isinstance(result, str):
            return ToolResult(text=result)
        return ToolResult(text=to_content(result, where).text)
    try:
        if wrapped:
            return ToolResult(output=model(result=result))
        return ToolResult(output=result if isinstance(result, model) else model.model_validate(result))
    except ValidationError as exc:
        raise TypeError(f"{where} returned a value that does not match its return annotation: {exc}") from None


def to_messages(result: Any, where: str) -> list[Message]:
    """A prompt's return value as messages: ``str`` one user message, a :class:`Message`, or a
    list of either.

    :raises TypeError: anything else (names the function).
    """
    items = [result] if isinstance(result, str | Message) else result
    if not isinstance(items, Sequence):
        raise TypeError(f"{where} returned {type(result).__name__}; return str, Message or a list of them")
    messages = []
    for item in items:
        if isinstance(item, str):
            messages.append(Message("user", item))
        elif isinstance(item, Message):
            messages.append(item)
        else:
            raise TypeError(f"{where} returned a {type(item).__name__} in its list; each item must be str or Message")
    return messages


def input_model(sig: Signature, tool: str) -> type[BaseModel]:
    """A tool's input model from its value parameters (annotations and defaults as pydantic reads them)."""
    fields: dict[str, Any] = {}
    for parameter in sig.values:
        hint = sig.hints.get(parameter.name, Any)
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[parameter.name] = (hint, default)
    return create_model(f"{_camel(tool)}Arguments", **fields)


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").replace(".", "_").split("_"))
