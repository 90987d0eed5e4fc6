"""A Python SDK 1.x client (run in its own venv): tour a server, print a JSON report.

Usage: python py1_client.py PLAN.json -- SERVER_COMMAND...   (stdio)
       python py1_client.py PLAN.json --url URL              (streamable HTTP)
(PLAN: see tests/test_client_matrix.py)
Every step's failure is recorded under "errors" (a validation error included); nothing is skipped.
"""

import asyncio
import contextlib
import json
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


@contextlib.asynccontextmanager
async def connected(plan, target):
    """(read, write) streams to the server: ``["--url", URL]`` or ``["--", COMMAND...]``."""
    if target[0] == "--url":
        from mcp.client.streamable_http import streamablehttp_client

        async with streamablehttp_client(target[1]) as (read, write, _session_id):
            yield read, write
        return
    command = target[1:]
    params = StdioServerParameters(command=command[0], args=command[1:], env=plan.get("env"))
    async with stdio_client(params) as (read, write):
        yield read, write


async def tour(plan, target):
    report = {"errors": [], "calls": {}}
    async with connected(plan, target) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        report["protocol"] = init.protocolVersion

        async def step(name, action):
            try:
                return await action()
            except Exception as exc:  # recorded, the tour goes on
                report["errors"].append(f"{name}: {type(exc).__name__}: {str(exc)[:500]}")
                return None

        tools = await step("tools/list", session.list_tools)
        report["tools"] = sorted(t.name for t in tools.tools) if tools else []
        resources = await step("resources/list", session.list_resources)
        report["resources"] = len(resources.resources) if resources else 0
        templates = await step("resources/templates/list", session.list_resource_templates)
        report["templates"] = len(templates.resourceTemplates) if templates else 0
        prompts = await step("prompts/list", session.list_prompts)
        report["prompts"] = len(prompts.prompts) if prompts else 0
        for uri in plan["reads"]:
            read = await step(f"read {uri}", lambda uri=uri: session.read_resource(uri))
            report.setdefault("reads", {})[uri] = len(read.contents) if read else 0
        ref = (
            types.ResourceTemplateReference if hasattr(types, "ResourceTemplateReference") else types.ResourceReference
        )
        done = await step(
            "complete",
            lambda: session.complete(
                ref(type="ref/resource", uri=plan["complete"]["template"]), plan["complete"]["argument"]
            ),
        )
        report["completions"] = done.completion.values if done else []
        for call in plan["calls"]:
            result = await step(
                f"call {call['name']}", lambda call=call: session.call_tool(call["name"], call["arguments"])
            )
            if result is not None:
                report["calls"][call["name"]] = {
                    "isError": bool(result.isError),
                    "types": [b.type for b in result.content],
                    "structured": getattr(result, "structuredContent", None) is not None,
                }
        prompt = plan["prompt"]
        got = await step("prompts/get", lambda: session.get_prompt(prompt["name"], prompt["arguments"]))
        report["promptMessages"] = len(got.messages) if got else 0
    return report


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        plan = json.load(f)
    print(json.dumps(asyncio.run(tour(plan, sys.argv[2:]))))


main()
