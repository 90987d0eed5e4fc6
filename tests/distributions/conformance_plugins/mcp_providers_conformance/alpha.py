"""The tools ``@modelcontextprotocol/conformance`` 0.2.0-alpha.12 adds to its server scenarios.

Each follows the scenario's stated requirements through the public plugin API only, so a check
that still fails names something the framework does (or does not yet) do, never a shortcut
here; ``docs/conformance.md`` lists them with the reason.

- JSON Schema 2020-12 (``json-schema-2020-12``): ``json_schema_2020_12_tool``, its input schema
  as the scenario gives it ($schema, $defs with $anchor, allOf/anyOf, if/then/else);
- stateless (``server-stateless``): ``test_missing_capability`` (needs sampling),
  ``test_streaming_elicitation`` (asks the user), ``test_logging_tool`` (logs);
- input rounds (``input-required-result-*``, SEP-2322): ``test_input_required_result_<kind>``;
- tasks (``tasks-*``, SEP-2663): ``greet``, ``slow_compute``, ``failing_job``,
  ``protocol_error_job``, ``confirm_delete``, ``multi_input``, ``test_tool_with_task``;
- skills (``sep-2640-skills-*``): one skill at ``skill://conformance/conformance-check``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict

from mcp_providers import SkillProvider, SkillSource, Tool, ToolCall, ToolFailure, ToolProvider, ToolResult

SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


class Contact(BaseModel):
    """The 2020-12 tool's arguments; its JSON Schema is the scenario's, keyword for keyword."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    address: dict[str, str] | None = None
    contactMethod: str | None = None
    phone: str | None = None
    email: str | None = None

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return SCHEMA_2020_12


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Name(BaseModel):
    name: str = "world"


class Filename(BaseModel):
    filename: str = ""


class Seconds(BaseModel):
    seconds: float = 0


NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _tool(name: str, description: str, model: type[BaseModel] = NoArguments, **fields: Any) -> Tool:
    return Tool(name=name, description=description, input_model=model, effects="none", **fields)


class AlphaTools(ToolProvider):
    """The 0.2.0-alpha.12 scenarios' tools."""

    name = "conformance-alpha-tools"

    def tools(self) -> Sequence[Tool]:
        return [
            _tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", Contact),
            _tool("test_missing_capability", "Asks the client's model, so it needs the sampling capability."),
            _tool("test_streaming_elicitation", "Asks the user for a name."),
            _tool("test_logging_tool", "Sends an info log message while it runs."),
            _tool("test_input_required_result_elicitation", "Asks the user's name, then greets."),
            _tool("test_input_required_result_sampling", "Asks the client's model for the capital of France."),
            _tool("test_input_required_result_request_state", "Asks for a confirmation, then says state-ok."),
            _tool("test_input_required_result_multiple_inputs", "Asks a name and a greeting."),
            _tool("test_input_required_result_multi_round", "Asks a name, then a color."),
            _tool("test_input_required_result_tampered_state", "Asks the user's name."),
            _tool("test_input_required_result_capabilities", "Asks the client's model (sampling only)."),
            _tool("greet", "Says hello.", Name),
            _tool("slow_compute", "Sleeps `seconds`, then answers.", Seconds, task_support="optional"),
            _tool("failing_job", "Fails after a second.", task_support="required"),
            _tool("protocol_error_job", "Breaks (a protocol error).", task_support="optional"),
            _tool("confirm_delete", "Asks before deleting `filename`.", Filename, task_support="required"),
            _tool("multi_input", "Asks two questions.", task_support="optional"),
            _tool("test_tool_with_task", "Asks the user's name, then answers as a task.", task_support="required"),
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        name = call.tool.name
        if name == "json_schema_2020_12_tool":
            return ToolResult(text=f"Received: {call.arguments.model_dump_json(exclude_none=True)}")
        if name in ("test_missing_capability", "test_input_required_result_capabilities"):
            answer = await call.sample("What is the capital of France?", max_tokens=100)
            return ToolResult(text=f"The model said: {answer.text}")
        if name == "test_input_required_result_sampling":
            answer = await call.sample("What is the capital of France?", max_tokens=100)
            return ToolResult(text=answer.text)
        if name == "test_input_required_result_request_state":
            await call.elicit(
                "Please confirm", {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
            )
            return ToolResult(text="state-ok: the confirmation arrived with the sealed request state")
        if name == "test_input_required_result_multiple_inputs":
            who = await call.elicit("What is your name?", NAME_FORM)
            greeting = await call.sample("Generate a greeting", max_tokens=50)
            return ToolResult(text=f"{greeting.text} {who.content.get('name')}")
        if name == "test_input_required_result_multi_round":
            who = await call.elicit("Step 1: What is your name?", NAME_FORM)
            color = await call.elicit(
                "Step 2: What is your favorite color?",
                {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
            )
            return ToolResult(text=f"{who.content.get('name')} likes {color.content.get('color')}")
        return await self._tasks(call, name)

    async def _tasks(self, call: ToolCall, name: str) -> ToolResult:
        if name in (
            "test_streaming_elicitation",
            "test_input_required_result_elicitation",
            "test_input_required_result_tampered_state",
            "test_tool_with_task",
        ):
            who = await call.elicit("What is your name?", NAME_FORM)
            return ToolResult(text=f"Hello, {who.content.get('name')}!")
        if name == "test_logging_tool":
            await call.log("info", "test_logging_tool ran", logger="conformance")
            return ToolResult(text="Logged once (if the client asked for logs).")
        if name == "greet":
            assert isinstance(call.arguments, Name)
            return ToolResult(text=f"Hello, {call.arguments.name}!")
        if name == "slow_compute":
            assert isinstance(call.arguments, Seconds)
            await anyio.sleep(call.arguments.seconds)
            return ToolResult(text=f"computed after {call.arguments.seconds:g} s")
        if name == "failing_job":
            await anyio.sleep(1)
            raise ToolFailure("failing_job always fails")
        if name == "protocol_error_job":
            raise RuntimeError("protocol_error_job breaks on purpose")
        if name == "confirm_delete":
            reply = await call.elicit(
                "Delete the file?",
                {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
            )
            assert isinstance(call.arguments, Filename)
            return ToolResult(text=f"confirm_delete {call.arguments.filename}: {reply.action}")
        if name == "multi_input":
            first = await call.elicit("First?", NAME_FORM)
            second = await call.elicit("Second?", NAME_FORM)
            return ToolResult(text=f"{first.content.get('name')} and {second.content.get('name')}")
        raise ToolFailure(f"no tool {name!r} in this plugin")


SKILL = {
    "SKILL.md": b"---\nname: conformance-check\ndescription: How to run the conformance suite against this "
    b"server. Use when checking it.\n---\n\n# Conformance check\n\nPick the pass in `passes/`.\n",
    "passes/active.md": b"Run the active suite.\n",
    "passes/requirements.md": b"Run one revision's requirements.\n",
}


class Skills(SkillProvider):
    """One skill, with a folder, for the ``sep-2640-skills-*`` scenarios (extension scenarios the
    report runs one by one)."""

    name = "conformance-skills"
    prefixes = ("skill://conformance/",)

    def skills(self) -> Sequence[SkillSource]:
        return [SkillSource("skill://conformance/conformance-check", tuple(SKILL))]

    def read(self, skill: SkillSource, path: str) -> bytes:
        return SKILL[path]
