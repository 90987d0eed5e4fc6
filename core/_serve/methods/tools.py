"""Tool methods: ``tools/list`` (a :class:`~mcp_providers._serve.methods.resources.ListMethod`) and ``tools/call``.

A call routes the tool by name, asks the gate (``call`` on the name; the tool asks about the data
it touches with :meth:`ToolCall.require <mcp_providers.providers.ToolCall.require>`), validates
the arguments against the input model (a bad argument is an ``isError`` result the model can
correct), runs the provider through the invoker (inside the side-effect scope when it declares
``effects="none"``), and builds the result under the evidence rules with a receipt over every block.

A tool that asks for input (``ToolCall.elicit``/``sample``) is asked for it over the
:class:`~mcp_providers._serve.methods.channel.SessionChannel` (server-to-client requests) on
2025-era sessions, and through :mod:`~mcp_providers._serve.methods.rounds` on 2026-07-28 ones:
the call ends with an ``InputRequiredResult`` (no receipt: nothing was served; the audit line's
``reason`` says input was required) and the client's retry, its ``requestState`` opened by
:class:`~mcp_providers._serve.steps.request_state.RequestStates`, runs the tool again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable
from typing import Any

import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from mcp_providers._holders import Frozen
from mcp_providers._host.assembly import Assembly
from mcp_providers._host.catalog import Entry
from mcp_providers._host.output_schemas import RESULT_KEY, output_schema
from mcp_providers._returns import may_be_non_finite, non_finite
from mcp_providers._serve.methods.argument_values import LinkedArguments
from mcp_providers._serve.methods.channel import SessionChannel
from mcp_providers._serve.methods.rounds import PENDING, RoundsChannel, checked_answers, until_input, wire_request
from mcp_providers._serve.methods.tasks import TaskChannel, Tasks, created_wire, shown
from mcp_providers._serve.state.tasks import TaskRecord
from mcp_providers._serve.steps import wire
from mcp_providers._serve.steps.asking import provider_asks
from mcp_providers._serve.steps.custody import arguments_hmac, audit_key
from mcp_providers._serve.steps.evidence import Blocks, result_receipt, served_blocks
from mcp_providers._serve.steps.exchange import Actor, Exchange
from mcp_providers._serve.steps.invoker import Invoker, Work
from mcp_providers._serve.steps.request_state import RequestStates, digest, state_key
from mcp_providers._serve.steps.surrogates import replaced
from mcp_providers.errors import InvalidParams, ProviderFailed, ToolFailure
from mcp_providers.models import RECEIPT_KEY, Tool
from mcp_providers.providers import ToolCall, ToolProvider, ToolResult

log = logging.getLogger("mcp_providers.server")


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Refused(Frozen):
    """A tool call answered with an ``isError`` result instead of running (or after failing)."""

    __slots__ = ("text",)

    text: str

    def __init__(self, text: str) -> None:
        object.__setattr__(self, "text", text)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Started(Frozen):
    """A call answered with a task handle (its body runs in the background: :mod:`.tasks`)."""

    __slots__ = ("record",)

    record: TaskRecord

    def __init__(self, record: TaskRecord) -> None:
        object.__setattr__(self, "record", record)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Asking(Frozen):
    """A 2026-07-28 round that stopped at questions: answered with an ``InputRequiredResult``."""

    __slots__ = ("arguments", "channel")

    channel: RoundsChannel
    arguments: str
    """Digest of the validated arguments (:func:`~mcp_providers._serve.steps.request_state.digest`)."""

    def __init__(self, channel: RoundsChannel, arguments: str) -> None:
        object.__setattr__(self, "channel", channel)
        object.__setattr__(self, "arguments", arguments)


# not a dataclass: never compared or shown, and made per call
class Validated:
    """The arguments of one call as validated while authorizing it (its linked arguments are asked
    about the values the tool will receive), for the call to run on the same ones: a
    ``default_factory`` may give another value each time."""

    __slots__ = ("arguments",)

    def __init__(self) -> None:
        self.arguments: BaseModel | None = None


Target = tuple[Entry[Tool, ToolProvider], types.CallToolRequestParams, Validated]
"""A routed ``tools/call``: the tool's catalog entry, the request's params, its validated arguments."""


def error_result(text: str) -> types.CallToolResult:
    """A result with ``isError: true`` saying ``text`` (a lone surrogate in it sent as U+FFFD)."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=replaced(text)[0])], is_error=True)


class CallTool:
    """``tools/call``."""

    name = "tools/call"
    actor: Actor = "model"

    def __init__(self, assembly: Assembly, invoker: Invoker, tasks: Tasks | None = None) -> None:
        self._assembly = assembly
        self._invoker = invoker
        self._tasks = tasks
        self._linked = LinkedArguments(assembly.catalog)
        self._settings = assembly.config.server
        # warn of a random key only where digests are meant to be compared: an audit log, or a named key
        wanted = bool(self._settings.audit_sinks()) or "audit_key_env" in self._settings.model_fields_set
        self._audit_key = audit_key(self._settings.audit_key_env, warn=wanted)
        key = state_key(self._settings.request_state_key_env)
        self._states = RequestStates(key, self._settings.request_state_ttl)

    def route(self, exchange: Exchange, params: types.CallToolRequestParams) -> Target:
        exchange.target = params.name
        entry = self._assembly.catalog.tool(params.name)
        if entry is None:
            raise InvalidParams(f"Unknown tool {params.name[:200]!r}; see tools/list", data={"tool": params.name[:200]})
        return entry, params, Validated()

    def authorize(self, exchange: Exchange, target: Target) -> None:
        """``call`` on the tool's name, then ``read`` on each resource a linked argument names in
        the validated arguments (:class:`~mcp_providers._serve.methods.argument_values.LinkedArguments`);
        arguments that fail validation run nothing, and :meth:`invoke` refuses them."""
        tool = target[0].declaration
        exchange.gate.require("call", tool.name)
        if not self._linked.gates(exchange.gate, tool):
            return
        try:
            arguments = tool.input_model.model_validate(target[1].arguments or {})
        except ValidationError:
            return
        self._linked.require(exchange.gate, tool, arguments)
        target[2].arguments = arguments

    async def invoke(self, exchange: Exchange, target: Target) -> tuple[object, str]:
        entry, params, validated = target
        tool = entry.declaration
        try:
            arguments = validated.arguments
            if arguments is None:
                arguments = tool.input_model.model_validate(params.arguments or {})
        except ValidationError as exc:
            hidden = self._linked.hidden(exchange.gate, tool)
            return Refused(f"Invalid arguments for {tool.name}: {_problems(exc, hidden)}"), ""
        plain = arguments.model_dump(mode="json")
        arguments_digest = arguments_hmac(self._audit_key, _canonical_json(plain))
        if self._tasks is not None and self._tasks.wanted(exchange, tool):
            record = await self._tasks.start(exchange, tool.name, params)
            exchange.reason = f"started as {shown(record.task_id)}"
            return Started(record), arguments_digest
        channel = self._channel(exchange, tool.name, plain, params)
        call = ToolCall(tool=tool, arguments=arguments, principal=exchange.principal, channel=channel)
        task = exchange.task
        work = Work(
            entry.plugin,
            entry.provider.name,
            f"running {tool.name}",
            tool.name,
            "tool",
            tool.effects == "none",
            timeout=self._tasks.settings.ttl_seconds if task is not None and self._tasks is not None else None,
        )

        def run() -> Awaitable[object]:
            running = entry.provider.call(call)
            return until_input(channel, running) if isinstance(channel, RoundsChannel) else running

        try:
            with provider_asks(exchange.gate, self._assembly.catalog):  # ToolCall.require asks as reads do
                produced = await self._invoker.run(work, run, custody=exchange.custody)
        except ToolFailure as exc:
            return Refused(f"{tool.name} failed: {exc}"), arguments_digest
        if produced is PENDING and isinstance(channel, RoundsChannel):
            return Asking(channel, digest(plain)), arguments_digest
        return produced, arguments_digest

    def _channel(
        self, exchange: Exchange, tool: str, arguments: Any, params: types.CallToolRequestParams
    ) -> SessionChannel:
        """The call's way back to its client: server-to-client requests before 2026-07-28; input
        rounds on 2026-07-28, answered from the verified ``requestState`` and ``inputResponses``
        (responses sent without a state answer nothing: the tool asks again). ``arguments`` is
        the validated arguments' JSON form; a state is bound to its plain SHA-256 (the same on
        every replica, unlike ``argumentsHmac``).

        :raises InvalidParams: the ``requestState`` is refused, or a response has the wrong shape.
        """
        task = exchange.task
        if task is not None and self._tasks is not None:
            return TaskChannel(task.ctx, task.task_id, self._tasks)
        if exchange.version not in MODERN_PROTOCOL_VERSIONS:
            return SessionChannel(exchange.ctx)
        if params.request_state is None:
            return RoundsChannel(exchange.ctx, {})
        responses = {
            key: response.model_dump(by_alias=True, mode="json", exclude_none=True)
            for key, response in (params.input_responses or {}).items()
        }
        opened = self._states.open(params.request_state, exchange.principal, tool, digest(arguments), responses)
        return RoundsChannel(exchange.ctx, checked_answers(opened))

    def _input_required(self, exchange: Exchange, tool: str, asking: Asking) -> types.InputRequiredResult:
        """The ``InputRequiredResult`` of a round that stopped at ``asking.channel.asked``."""
        requests = {key: wire_request(request) for key, request in asking.channel.asked.items()}
        asked = {key: (str(wire["method"]), digest(wire)) for key, wire in requests.items()}
        state = self._states.seal(exchange.principal, tool, asking.arguments, asked, asking.channel.used)
        exchange.reason = "input required: " + ", ".join(f"{key} {method}" for key, (method, _) in asked.items())
        return types.InputRequiredResult(input_requests=dict(asking.channel.asked), request_state=state)

    def evidence(
        self, exchange: Exchange, target: Target, outcome: tuple[object, str]
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        entry = target[0]
        produced, arguments_digest = outcome
        if isinstance(produced, Started):
            return created_wire(produced.record)
        if isinstance(produced, Asking):
            return self._input_required(exchange, entry.declaration.name, produced)
        if isinstance(produced, Refused):
            exchange.decision, exchange.reason = "error", "the tool returned an error result"
            return error_result(produced.text)
        tool = entry.declaration
        result = _as_result(entry, produced)
        blocks = Blocks(self._assembly.catalog, exchange.gate, self._settings.max_embed_bytes, f"tool {tool.name}")
        structured = _output(entry, result, blocks)
        for link in result.links:
            blocks.add(blocks.link(link))
        for embed in result.embedded:
            blocks.add(blocks.embed(embed))
        content, structured, (data, summaries) = served_blocks(list(blocks.content), structured, blocks.transforms)
        out = types.CallToolResult(content=content, structured_content=structured)
        cap = self._settings.max_result_bytes
        over = len(data) > cap
        if over:  # refused whole: a cut JSON document or half a block would mislead the model
            exchange.decision, exchange.reason = "error", f"result of {len(data)} bytes over max_result_bytes {cap}"
            out = error_result(
                f"{tool.name} produced a result of {len(data)} bytes, over the server's max_result_bytes of {cap}; "
                "call it with narrower arguments (fewer items, a smaller range), or ask the operator to raise "
                "[server] max_result_bytes"
            )
            summaries = []
        exchange.receipt = self._receipt(exchange, entry, data, summaries, blocks.transforms, arguments_digest)
        if over:
            exchange.receipt["truncation"] = {
                "resultBytes": len(data),
                "servedBytes": 0,
                "limit": cap,
                "reason": "over max_result_bytes; the result was refused",
            }
        out.meta = {RECEIPT_KEY: exchange.receipt}
        return out

    def _receipt(
        self,
        exchange: Exchange,
        entry: Entry[Tool, ToolProvider],
        data: bytes,
        summaries: list[dict[str, Any]],
        transforms: list[str],
        arguments_digest: str,
    ) -> dict[str, Any]:
        tool = entry.declaration
        extra = {
            "tool": tool.name,
            "idempotent": tool.annotations()["idempotentHint"],  # read-only tools are idempotent
            "openWorld": tool.open_world,
            "argumentsHmac": arguments_digest,
        }
        origins = self._assembly.origins
        return result_receipt(
            exchange, origins, entry, (data, summaries), transforms, side_effects=tool.effects, extra=extra
        )


MAX_PROBLEMS = 5
"""Validation problems named in a refusal; the rest are counted."""
MAX_PROBLEM_CHARS = 300
"""Characters kept of each problem's location and message (input is never quoted beyond this)."""


def _problems(exc: ValidationError, hidden: frozenset[str] = frozenset()) -> str:
    """The validation problems, bounded: at most :data:`MAX_PROBLEMS`, each cut to
    :data:`MAX_PROBLEM_CHARS`, so a refusal never grows with the input it refuses. A problem of an
    argument in ``hidden`` says where to find its values instead of naming them."""
    errors = exc.errors(include_input=False, include_url=False)
    shown = []
    for err in errors[:MAX_PROBLEMS]:
        where = ".".join(str(p) for p in err["loc"])[:100]
        message = err["msg"].removeprefix("Value error, ")
        if err["loc"] and err["loc"][0] in hidden:  # its message may list every value, a denied one among them
            message = "not a value offered for it; tools/list lists those this caller may give"
        if len(message) > MAX_PROBLEM_CHARS:
            message = message[:MAX_PROBLEM_CHARS] + "..."
        # A model-wide validator (an upstream's or an OpenAPI operation's JSON Schema, say) names
        # its own locations: no "(arguments): " of ours before its "(arguments): ..." or "a/b: ...".
        shown.append(f"{where}: {message}" if where else message)
    if len(errors) > MAX_PROBLEMS:
        shown.append(f"and {len(errors) - MAX_PROBLEMS} more problem(s)")
    return "; ".join(shown)


def _canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _as_result(entry: Entry[Tool, ToolProvider], produced: object) -> ToolResult:
    if isinstance(produced, ToolResult):
        return produced
    if isinstance(produced, BaseModel):
        return ToolResult(output=produced)
    raise ProviderFailed(
        f"tool {entry.declaration.name} (plugin {entry.plugin!r}) returned {type(produced).__name__}; "
        "expected ToolResult"
    )


def _unserializable(entry: Entry[Tool, ToolProvider], exc: Exception) -> ProviderFailed:
    """The failure of a result whose output JSON cannot carry; the exception's text (it may quote
    the value) goes to the server log only."""
    where = f"tool {entry.declaration.name!r} (plugin {entry.plugin!r})"
    log.error("%s returned output JSON cannot carry: %s: %s", where, type(exc).__name__, exc)
    return ProviderFailed(
        f"{where} returned output JSON cannot carry ({type(exc).__name__}; the server log has the details); "
        "return JSON values (str, int, float, bool, None, lists and str-keyed dicts of them) or a pydantic model, "
        "and annotate the function with that type"
    )


def _output(entry: Entry[Tool, ToolProvider], result: ToolResult, blocks: Blocks) -> Any:
    """Add the structured output (as JSON text too), the text and the media blocks; return the structure."""
    tool = entry.declaration
    model = tool.output_model
    structured = None
    if result.output is not None:
        if model is None or not isinstance(result.output, model):
            raise ProviderFailed(
                f"tool {tool.name} returned {type(result.output).__name__}; its declared output model is "
                f"{model.__name__ if model else 'none'}"
            )
        try:
            structured = result.output.model_dump(mode="json", by_alias=True)
            if output_schema(model).wrapped:  # served under "result", as its outputSchema says
                structured = {RESULT_KEY: structured}
            text = json.dumps(structured, ensure_ascii=False)
        except (PydanticSerializationError, ValueError, TypeError) as exc:  # bytes not UTF-8: ValueError
            raise _unserializable(entry, exc) from None
        if may_be_non_finite(text) and (at := non_finite(structured)) is not None:
            raise ProviderFailed(  # sent, it would be null, against the tool's own outputSchema
                f"tool {tool.name!r} (plugin {entry.plugin!r}) returned a non-finite number (NaN or Infinity) at "
                f"{at}, which JSON cannot carry; return a finite number, or None under an Optional annotation"
            )
        blocks.add(types.TextContent(type="text", text=text))
    elif model is not None:
        raise ProviderFailed(f"tool {tool.name} returned no output; it declares {model.__name__}")
    if result.text:
        blocks.add(types.TextContent(type="text", text=result.text))
    for block in result.content:
        try:
            blocks.add(wire.media_wire(block))
        except TypeError as exc:
            raise ProviderFailed(f"tool {tool.name} returned bad content: {exc}") from None
    return structured
