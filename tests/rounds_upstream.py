"""An SDK v2 server (``MCPServer``) whose tools ask its client: the 2026-07-28 upstream of
tests/test_upstream_rounds.py, served over stdio (``python tests/rounds_upstream.py``).

``confirm`` elicits a form (name, confirm) and echoes the answer; ``confirm_twice`` two at once;
``ask_model`` samples the
client's model and echoes the reply; ``plain`` asks nothing; reading ``rounds://asks/{what}``
asks a form (2026-07-28 only). On 2026-07-28 the questions travel as
an ``InputRequiredResult`` (the SDK's resolvers), before that as server-to-client requests.
"""

from __future__ import annotations

from typing import Annotated

import mcp_types as types
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve, Sample
from pydantic import BaseModel

server = MCPServer("rounds-upstream", version="1.0", log_level="WARNING")


class Form(BaseModel):
    name: str
    confirm: bool


def ask_form(note: str) -> Elicit[Form]:
    return Elicit(f"Confirm {note}?", Form)


def ask_the_model(note: str) -> Sample:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"Say hi to {note}"))
    return Sample([message], max_tokens=33, system_prompt="Be brief.")


@server.tool(description="Asks the user to confirm, then echoes the answer.")
async def confirm(note: str, answer: Annotated[ElicitationResult[Form], Resolve(ask_form)]) -> str:
    if answer.action == "accept":
        return f"{note}: accepted by {answer.data.name} (confirm={answer.data.confirm})"
    return f"{note}: {answer.action}"


def ask_witness(note: str) -> Elicit[Form]:
    return Elicit(f"Witness {note}?", Form)


@server.tool(description="Asks two forms at once (one InputRequiredResult on 2026-07-28), then echoes both.")
async def confirm_twice(
    note: str,
    answer: Annotated[ElicitationResult[Form], Resolve(ask_form)],
    witness: Annotated[ElicitationResult[Form], Resolve(ask_witness)],
) -> str:
    names = [a.data.name if a.action == "accept" else a.action for a in (answer, witness)]
    return f"{note}: confirmed by {names[0]}, witnessed by {names[1]}"


@server.tool(description="Asks the client's model, then echoes its reply.")
async def ask_model(note: str, reply: Annotated[types.CreateMessageResult, Resolve(ask_the_model)]) -> str:
    text = reply.content.text if isinstance(reply.content, types.TextContent) else "?"
    return f"{note}: the model {reply.model} said {text!r}"


@server.resource("rounds://asks/{what}", mime_type="text/plain")
def asks(what: str, ctx: Context) -> str | types.InputRequiredResult:
    """A read that asks (a resource cannot be asked through mcp-providers: only a tool call can)."""
    if ctx.input_responses:
        return f"read {what}, answered"
    form = types.ElicitRequestFormParams(message=f"Read {what}?", requested_schema={"type": "object", "properties": {}})
    return types.InputRequiredResult(input_requests={"ask": types.ElicitRequest(params=form)})


@server.tool(description="Asks nothing.")
def plain(note: str, ctx: Context) -> str:
    return f"plain {note}"


if __name__ == "__main__":
    server.run("stdio")
