"""Providers for the custody tests: the seed's six delivery cases and four rejections."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel

from mcp_providers import (
    Content,
    Freshness,
    ReadRequest,
    Resource,
    ResourceProvider,
    ResourceTemplate,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers.providers import Embed, Link

HANDBOOK = "# Handbook v4\n\n" + "Be kind. " * 200
REPORT = "<html><body>" + "<p>weekly row</p>" * 1100 + "</body></html>"  # about 18 kB


class Docs(ResourceProvider):
    name = "docs"
    prefixes = ("kb://", "crm://", "report://", "status://")

    def __init__(self) -> None:
        self.status = {"state": "green", "version": 12}

    def resources(self) -> Sequence[Resource]:
        return [
            Resource(uri="kb://handbook/v4", name="handbook", mime_type="text/markdown", freshness=Freshness.static()),
            Resource(uri="report://synthetic/weekly-7", name="weekly", mime_type="text/html"),
            Resource(
                uri="status://service/current", name="status", mime_type="application/json", freshness=Freshness.live()
            ),
            Resource(
                uri="status://service/cached",
                name="cached-status",
                mime_type="application/json",
                freshness=Freshness.max_age(300),
            ),
            Resource(
                uri="status://service/recent",
                name="recent-status",
                mime_type="application/json",
                freshness=Freshness.max_age(300),
            ),
            Resource(uri="kb://big", name="big", mime_type="text/plain", max_bytes=1000, allow_truncation=True),
            Resource(uri="kb://huge", name="huge", mime_type="text/plain", max_bytes=1000),
        ]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="crm://customer/{id}", name="customer", mime_type="application/json")]

    async def read(self, request: ReadRequest) -> Content:
        uri = request.uri
        if uri == "kb://handbook/v4":
            return Content(text=HANDBOOK)
        if uri == "report://synthetic/weekly-7":
            return Content(text=REPORT)
        if uri.startswith("status://"):
            as_of = datetime.now(UTC) - timedelta(seconds=2) if uri.endswith("recent") else None
            return Content(text=json.dumps(self.status), as_of=as_of)
        if uri in ("kb://big", "kb://huge"):
            return Content(text="é" * 2000)  # 4000 bytes of two-byte characters
        return Content(text=json.dumps({"id": request.params["id"], "tier": "gold"}))


class RiskIn(BaseModel):
    customer: str


class RiskOut(BaseModel):
    customer: str
    score: int


class ReportIn(BaseModel):
    week: int


class Report(BaseModel):
    week: int
    rows: int


class DraftIn(BaseModel):
    draft: str


class Approved(BaseModel):
    draft: str
    state: str


class Tools(ToolProvider):
    name = "tools"

    def tools(self) -> Sequence[Tool]:
        return [
            Tool(name="risk_score", description="Score a customer.", input_model=RiskIn, output_model=RiskOut),
            Tool(
                name="generate_report",
                description="Generate the weekly report.",
                input_model=ReportIn,
                output_model=Report,
            ),
            Tool(name="strict_report", description="Embed the report or fail.", input_model=ReportIn),
            Tool(
                name="approve_draft",
                description="Approve a draft.",
                input_model=DraftIn,
                output_model=Approved,
                effects="destructive",
                idempotent=True,
            ),
            Tool(name="bad_link", description="Links to nothing.", input_model=ReportIn),
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        args: Any = call.arguments
        name = call.tool.name
        if name == "risk_score":
            return ToolResult(output=RiskOut(customer=args.customer, score=42))
        if name == "generate_report":
            return ToolResult(
                output=Report(week=args.week, rows=1100),
                embedded=(Embed(uri="report://synthetic/weekly-7", text=REPORT, mime_type="text/html"),),
            )
        if name == "strict_report":
            return ToolResult(
                text="report",
                embedded=(
                    Embed(uri="report://synthetic/weekly-7", text=REPORT, mime_type="text/html", over_budget="error"),
                ),
            )
        if name == "approve_draft":
            evidence = json.dumps({"draft": args.draft, "state": "approved"})
            return ToolResult(
                output=Approved(draft=args.draft, state="approved"),
                embedded=(Embed(uri="crm://customer/" + args.draft, text=evidence, mime_type="application/json"),),
                links=(Link(uri="kb://handbook/v4", name="handbook"),),
            )
        return ToolResult(text="see link", links=(Link(uri="nowhere://x", name="x"),))


def plugin(docs: Docs | None = None) -> SimpleNamespace:
    docs = docs or Docs()

    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [docs]

    @hookimpl
    def register_tool_providers() -> list[ToolProvider]:
        return [Tools()]

    return SimpleNamespace(
        register_resource_providers=register_resource_providers,
        register_tool_providers=register_tool_providers,
        docs=docs,
    )


class MutablePolicy:
    """An authorize plugin whose rules a test can change while the server runs."""

    def __init__(self) -> None:
        self.denied: set[tuple[str, str]] = set()  # (action, target)

    @hookimpl
    def authorize(self, subject: str, action: str, target: str) -> Any:
        from mcp_providers import Decision

        if (action, target) in self.denied:
            return Decision(False, f"test policy denies {action} on {target}")
        return None
