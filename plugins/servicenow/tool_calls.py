"""The ServiceNow tools' arguments and results (the ``*In``/``*Out`` models) and what each call
does; :class:`~mcp_providers.plugins.servicenow.tools.ServiceNowTools` declares and runs them
(see :mod:`~mcp_providers.plugins.servicenow.tools` for the tools).

Imported with the first instance: with none configured no tool is declared, and neither this
module, its models nor the client it calls through are imported (issue 43).
"""

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcp_providers import policy
from mcp_providers.errors import NotFound, TooLarge, ToolFailure
from mcp_providers.models import Tool
from mcp_providers.plugins.servicenow import live
from mcp_providers.plugins.servicenow.client import InstancePool
from mcp_providers.plugins.servicenow.errors import ServiceNowError, UnknownInstance
from mcp_providers.plugins.servicenow.icons import ICONS
from mcp_providers.plugins.servicenow.instance import InstanceClient
from mcp_providers.plugins.servicenow.query import (
    NUMBER_PATTERN,
    SYS_ID_PATTERN,
    TABLE_PATTERN,
    Filter,
    Order,
    QueryError,
    build_query,
    check_field,
    check_number,
)
from mcp_providers.plugins.servicenow.schema import RECORD_SHAPE, UnknownDotWalk, raw, walk
from mcp_providers.plugins.servicenow.settings import INSTANCE_NAME_PATTERN
from mcp_providers.providers import Link, ToolCall, ToolResult

__all__ = [
    "AddCommentIn",
    "CommentOut",
    "CreateIncidentIn",
    "GetRecordIn",
    "QueryTableIn",
    "QueryTableOut",
    "RecordOut",
    "ResolveIncidentIn",
    "UpdateRecordIn",
    "declared",
    "record_uri",
    "run",
]

# Built at first use (declaring the tools builds them): with no instance configured no tool is
# declared, and every serve of the built-ins without [plugins.servicenow] skips their schemas.
_OUT = ConfigDict(defer_build=True)
_IN = ConfigDict(extra="forbid", defer_build=True)
_INSTANCE = Field(pattern=INSTANCE_NAME_PATTERN, description="Configured instance name, e.g. 'dev'.")
_TABLE = Field(pattern=TABLE_PATTERN.pattern, description="Table name, e.g. 'incident'.")
_SYS_ID_DOC = "sys_id: 32 lowercase hexadecimal characters."
_NUMBER_DOC = "Record number, e.g. 'INC0010001'."
DisplayValue = Literal["false", "true", "all"]
_DISPLAY_DOC = ("Accepted for compatibility, no effect: records always hold reference and choice fields as "
                "{value, display_value} and other fields as strings.")  # fmt: skip
_RECORDS_DOC = f"Records, {RECORD_SHAPE}."


def _check_fields(values: list[str]) -> list[str]:
    for value in values:
        check_field(value)
    return values


# -- inputs and outputs --------------------------------------------------------------------------


class QueryTableIn(BaseModel):
    """Arguments of ``servicenow_query_table``."""

    model_config = _IN

    instance: str = _INSTANCE
    table: str = _TABLE
    filters: list[Filter] = Field(default_factory=list, description="Conditions, all of which must hold.")
    fields: list[str] = Field(default_factory=list, description="Fields to return; empty for all.")
    limit: int = Field(default=25, ge=1, le=1000, description="Records per page (1-1000).")
    offset: int = Field(default=0, ge=0, description="Records to skip (for the next page, use next_offset).")
    order_by: list[Order] = Field(default_factory=list, description="Sort keys, most significant first.")
    display_value: DisplayValue = Field(default="all", description=_DISPLAY_DOC)

    @field_validator("fields")
    @classmethod
    def _fields(cls, values: list[str]) -> list[str]:
        return _check_fields(values)


class QueryTableOut(BaseModel):
    """Result of ``servicenow_query_table``."""

    model_config = _OUT

    instance: str
    table: str
    encoded_query: str = Field(description="The sysparm_query sent.")
    records: list[dict[str, Any]] = Field(description=_RECORDS_DOC)
    record_count: int
    total: int | None = Field(
        description="Records matching across all pages, hidden ones included (X-Total-Count); "
        "null when the instance does not send it."
    )
    has_more: bool
    next_offset: int | None = Field(description="offset for the next page, or null on the last page.")
    hidden_records: int = Field(default=0, description="Rows of this page's range the instance's ACLs hid.")


class GetRecordIn(BaseModel):
    """Arguments of ``servicenow_get_record``."""

    model_config = _IN

    instance: str = _INSTANCE
    table: str = _TABLE
    sys_id: str = Field(pattern=SYS_ID_PATTERN.pattern, description=_SYS_ID_DOC)
    fields: list[str] = Field(default_factory=list, description="Fields to return; empty for all.")
    display_value: DisplayValue = Field(default="all", description=_DISPLAY_DOC)

    @field_validator("fields")
    @classmethod
    def _fields(cls, values: list[str]) -> list[str]:
        return _check_fields(values)


class RecordOut(BaseModel):
    """One record, as read or written."""

    model_config = _OUT

    instance: str
    table: str
    sys_id: str
    number: str | None = None
    record: dict[str, Any] = Field(description=f"The record, {RECORD_SHAPE}.")
    uri: str | None = Field(default=None, description="The record's resource URI, where one exists.")


class CreateIncidentIn(BaseModel):
    """Arguments of ``servicenow_create_incident``."""

    model_config = _IN

    instance: str = _INSTANCE
    short_description: str = Field(min_length=1, max_length=160)
    description: str | None = Field(default=None, max_length=4000)
    urgency: Literal["1", "2", "3"] | None = Field(default=None, description="1 High, 2 Medium, 3 Low.")
    impact: Literal["1", "2", "3"] | None = Field(default=None, description="1 High, 2 Medium, 3 Low.")
    category: str | None = Field(default=None, max_length=40)
    caller_id: str | None = Field(default=None, pattern=SYS_ID_PATTERN.pattern, description="Caller's sys_user sys_id.")
    assignment_group: str | None = Field(default=None, pattern=SYS_ID_PATTERN.pattern,
                                         description="sys_user_group sys_id.")  # fmt: skip


class UpdateRecordIn(BaseModel):
    """Arguments of ``servicenow_update_record``."""

    model_config = _IN

    instance: str = _INSTANCE
    table: str = _TABLE
    sys_id: str = Field(pattern=SYS_ID_PATTERN.pattern, description=_SYS_ID_DOC)
    values: dict[str, str] = Field(min_length=1, description="Field name -> new value (strings, as ServiceNow stores).")

    @field_validator("values")
    @classmethod
    def _names(cls, values: dict[str, str]) -> dict[str, str]:
        for name in values:
            if "." in check_field(name):
                raise ValueError(f"field {name!r}: dot-walked fields cannot be written; update the referenced record")
            if name.startswith("sys_"):
                raise ValueError(f"field {name!r}: sys_ fields are maintained by the instance and cannot be set")
        return values


class _ByIdOrNumber(BaseModel):
    model_config = _IN

    instance: str = _INSTANCE
    sys_id: str | None = Field(default=None, pattern=SYS_ID_PATTERN.pattern, description=_SYS_ID_DOC)
    number: str | None = Field(default=None, pattern=NUMBER_PATTERN.pattern, description=_NUMBER_DOC)

    @model_validator(mode="after")
    def _one_key(self) -> "_ByIdOrNumber":
        if (self.sys_id is None) == (self.number is None):
            raise ValueError("give exactly one of sys_id and number")
        return self


class AddCommentIn(_ByIdOrNumber):
    """Arguments of ``servicenow_add_comment``: the record (sys_id or number) and the text."""

    table: Literal["incident", "problem", "change_request"] = "incident"
    text: str = Field(min_length=1, max_length=4000)
    kind: Literal["comment", "work_note"] = Field(
        default="comment", description="'comment' is visible to the caller; 'work_note' only to fulfillers."
    )


class CommentOut(BaseModel):
    """Result of ``servicenow_add_comment``."""

    model_config = _OUT

    instance: str
    table: str
    sys_id: str
    number: str | None
    field: Literal["comments", "work_notes"]
    uri: str | None


class ResolveIncidentIn(_ByIdOrNumber):
    """Arguments of ``servicenow_resolve_incident``."""

    close_code: str = Field(default="Solved (Permanently)", min_length=1, max_length=80)
    close_notes: str = Field(min_length=1, max_length=4000, description="What was done; required by ServiceNow.")


# -- provider ------------------------------------------------------------------------------------


def record_uri(instance: str, table: str, record: dict[str, Any]) -> str | None:
    """The resource URI of a record, or ``None`` for tables with no per-record resource."""
    number = record.get("number")
    sys_id = record.get("sys_id")
    if table == "incident" and isinstance(number, str) and NUMBER_PATTERN.fullmatch(number):
        return f"servicenow://{instance}/incidents/{number}"
    if table == "sys_update_set" and isinstance(sys_id, str) and SYS_ID_PATTERN.fullmatch(sys_id):
        return f"servicenow://{instance}/update-sets/{sys_id}"
    return None


_RECORD_KEYS = {"incident": "number", "sys_update_set": "sys_id"}
"""Tables whose records are also served as resources -> the field their URI is made from."""


def _with_key(table: str, fields: list[str]) -> list[str]:
    """``fields`` plus the field a record's URI is made from (so its read can be asked about)."""
    key = _RECORD_KEYS.get(table)
    return [*fields, key] if fields and key is not None and key not in fields else fields


def _readable(instance: str, table: str, records: list[dict[str, Any]], fields: list[str]) -> list[dict[str, Any]]:
    """The records whose own resource (if any) the caller may read, keeping only ``fields``
    (all when empty): a query never returns a record a ``read`` rule on its URI refuses."""
    kept = []
    for record in records:
        uri = record_uri(instance, table, {k: raw(v) for k, v in record.items()})
        if uri is None or policy.allowed("read", uri):
            kept.append({k: v for k, v in record.items() if k in fields} if fields else record)
    return kept


def _links(instance: str, table: str, records: Sequence[dict[str, Any]]) -> tuple[Link, ...]:
    links = []
    for record in records:
        uri = record_uri(instance, table, record)
        if uri is not None:
            label = record.get("number") or record.get("name") or record.get("sys_id")
            links.append(Link(uri=uri, name=str(label), mime_type="application/json"))
    return tuple(links)


def declared() -> list[Tool]:
    """The six tools (declared when an instance is configured)."""
    return [
        Tool(name="servicenow_query_table", title="Query a ServiceNow table", input_model=QueryTableIn,
             output_model=QueryTableOut, effects="none", open_world=True, icons=ICONS, task_support="optional",
             description="Read records of any table on one instance, with structured filters (field, operator, "
             "value), fields, limit, offset and sort order. Read-only. Returns one page plus the total."),
        Tool(name="servicenow_get_record", title="Get a ServiceNow record", input_model=GetRecordIn,
             output_model=RecordOut, effects="none", open_world=True, icons=ICONS,
             description="Read one record by table and sys_id."),
        Tool(name="servicenow_create_incident", title="Create an incident", input_model=CreateIncidentIn,
             output_model=RecordOut, effects="additive", open_world=True, icons=ICONS,
             description="Create a new incident on one instance; returns it with its number and resource link."),
        Tool(name="servicenow_update_record", title="Update a ServiceNow record", input_model=UpdateRecordIn,
             output_model=RecordOut, effects="destructive", idempotent=True, open_world=True, icons=ICONS,
             description="Change the given fields of one record (PATCH: other fields stay as they are)."),
        Tool(name="servicenow_add_comment", title="Add a comment or work note", input_model=AddCommentIn,
             output_model=CommentOut, effects="additive", open_world=True, icons=ICONS,
             description="Append a comment (visible to the caller) or a work note (fulfillers only) to an "
             "incident, problem or change request, found by sys_id or number."),
        Tool(name="servicenow_resolve_incident", title="Resolve an incident", input_model=ResolveIncidentIn,
             output_model=RecordOut, effects="destructive", idempotent=True, open_world=True, icons=ICONS,
             description="Set an incident to Resolved (state 6) with a close code and close notes."),
    ]  # fmt: skip


async def run(pool: InstancePool, call: ToolCall, provider: str) -> ToolResult:
    """Run one tool for :class:`~.tools.ServiceNowTools` (named ``provider``) over ``pool``.

    :raises ToolFailure: unknown instance, malformed value, no such record, or ServiceNow
        refused the operation (400, 403, 404).
    :raises mcp_providers.errors.Denied: the policy refuses ``read`` (read-only tools) or ``call``
        (the others) on ``servicenow://{instance}/{table}``.
    :raises mcp_providers.plugins.servicenow.errors.ServiceNowError: timeout, 5xx, rejected
        credentials or exhausted rate limit.
    """
    args = call.arguments
    # Ask the policy about the data too, not only the tool's name: a rule on
    # servicenow://prod/* then holds for tools as it does for resource reads.
    instance, table = getattr(args, "instance", ""), getattr(args, "table", "incident")
    call.require("read" if call.tool.effects == "none" else "call", f"servicenow://{instance}/{table}")
    try:
        _require_walks(call, instance, table, args)
        client = pool.client_for(getattr(args, "instance", ""), call)
        if isinstance(args, QueryTableIn):
            return await _query(client, args)
        if isinstance(args, GetRecordIn):
            return await _get(call, client, args)
        if isinstance(args, CreateIncidentIn):
            values = args.model_dump(exclude={"instance"}, exclude_none=True)
            record = await client.create_record("incident", values)
            await _written(pool, client, "incident", raw(record.get("sys_id")), record)
            return _record(client, "incident", raw(record.get("sys_id")), record)
        if isinstance(args, UpdateRecordIn):
            record = await client.update_record(args.table, args.sys_id, args.values)
            await _written(pool, client, args.table, args.sys_id, record)
            return _record(client, args.table, args.sys_id, record)
        if isinstance(args, AddCommentIn):
            return await _comment(pool, client, args)
        if isinstance(args, ResolveIncidentIn):
            sys_id, _ = await _locate(client, "incident", args.sys_id, args.number)
            values = {"state": "6", "close_code": args.close_code, "close_notes": args.close_notes}
            record = await client.update_record("incident", sys_id, values)
            await _written(pool, client, "incident", sys_id, record)
            return _record(client, "incident", sys_id, record)
    except (UnknownInstance, QueryError, UnknownDotWalk) as exc:
        raise ToolFailure(str(exc)) from None
    except (NotFound, TooLarge, ServiceNowError) as exc:
        raise ToolFailure(pool.redactor.text(exc.message)) from None
    raise ToolFailure(f"tool {call.tool.name!r} is not served by {provider}")


def _require_walks(call: ToolCall, instance: str, table: str, args: Any) -> None:
    """Ask the policy about every table a dot-walked field, filter or sort key reaches.

    :raises UnknownDotWalk: a dot-walk through a field not known to be a reference.
    :raises mcp_providers.errors.Denied: the policy refuses ``read`` on a reached table.
    """
    paths = list(getattr(args, "fields", ()))
    paths += [f.field for f in getattr(args, "filters", ())] + [o.field for o in getattr(args, "order_by", ())]
    reached = {target for path in paths if "." in path for target in walk(table, path)}
    for target in sorted(reached):
        call.require("read", f"servicenow://{instance}/{target}")


async def _query(client: InstanceClient, args: QueryTableIn) -> ToolResult:
    orders = list(args.order_by)
    if not any(o.field == "sys_id" for o in orders):
        orders.append(Order(field="sys_id"))  # ties broken the same way on every page
    query = build_query(args.filters, orders)
    page = await client.list_records(args.table, query=query, fields=_with_key(args.table, args.fields),
                                     limit=args.limit, offset=args.offset)  # fmt: skip
    records = _readable(client.name, args.table, page.records, args.fields)
    total = None if page.total is None else page.total - (len(page.records) - len(records))
    output = QueryTableOut(instance=client.name, table=args.table, encoded_query=query, records=records,
                           record_count=len(records), total=total, has_more=page.has_more,
                           next_offset=page.next_offset, hidden_records=page.hidden)  # fmt: skip
    plain = [{k: raw(v) for k, v in r.items()} for r in records]
    return ToolResult(output=output, links=_links(client.name, args.table, plain))


async def _get(call: ToolCall, client: InstanceClient, args: GetRecordIn) -> ToolResult:
    """One record; refused (``Denied``) when the caller may not read the resource serving it."""
    record = await client.get_record(args.table, args.sys_id, fields=_with_key(args.table, args.fields))
    uri = record_uri(client.name, args.table, {k: raw(v) for k, v in record.items()} | {"sys_id": args.sys_id})
    if uri is not None:
        call.require("read", uri)
    if args.fields:
        record = {k: v for k, v in record.items() if k in args.fields}
    return _record(client, args.table, args.sys_id, record)


async def _written(pool: InstancePool, client: InstanceClient, table: str, sys_id: str, record: dict[str, Any]) -> None:
    """Tell watchers what this write changed (the record, its list) without waiting for a poll."""
    await live.written(pool, client.name, table, {k: raw(v) for k, v in record.items()} | {"sys_id": sys_id})


def _record(client: InstanceClient, table: str, sys_id: str, record: dict[str, Any]) -> ToolResult:
    plain = {k: raw(v) for k, v in record.items()}
    uri = record_uri(client.name, table, plain | {"sys_id": sys_id})
    output = RecordOut(instance=client.name, table=table, sys_id=sys_id, number=plain.get("number") or None,
                       record=record, uri=uri)  # fmt: skip
    links = (Link(uri=uri, name=plain.get("number") or sys_id, mime_type="application/json"),) if uri else ()
    return ToolResult(output=output, links=links)


async def _locate(client: InstanceClient, table: str, sys_id: str | None,
                  number: str | None) -> tuple[str, str | None]:  # fmt: skip
    """(sys_id, number) of the record named by exactly one of them."""
    if sys_id is not None:
        return sys_id, None
    check_number(number or "")
    query = build_query([Filter(field="number", value=number)])
    page = await client.list_records(table, query=query, fields=("sys_id", "number"), limit=1)
    if not page.records:
        raise NotFound(f"no {table} record with number {number} on instance {client.name!r}")
    return raw(page.records[0].get("sys_id")), number


async def _comment(pool: InstancePool, client: InstanceClient, args: AddCommentIn) -> ToolResult:
    sys_id, number = await _locate(client, args.table, args.sys_id, args.number)
    field: Literal["comments", "work_notes"] = "comments" if args.kind == "comment" else "work_notes"
    record = await client.update_record(args.table, sys_id, {field: args.text})
    await _written(pool, client, args.table, sys_id, record)
    number = number or raw(record.get("number")) or None
    uri = record_uri(client.name, args.table, {"number": number, "sys_id": sys_id})
    output = CommentOut(instance=client.name, table=args.table, sys_id=sys_id, number=number, field=field, uri=uri)
    links = (Link(uri=uri, name=number or sys_id, mime_type="application/json"),) if uri else ()
    return ToolResult(output=output, links=links)
