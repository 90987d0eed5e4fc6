"""Reads of one configured instance: the bodies of the per-instance resources and the values
completion offers, each read through the instance's client.

Imported at the first read of an instance, never with none configured: the resources served then
(``servicenow://instances`` and ``servicenow://tables``) need neither the query builder nor the
client (issue 43). The envelope, the member templates and the URIs are
:mod:`~mcp_providers.plugins.servicenow.resources`'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_providers import policy
from mcp_providers.errors import NotFound
from mcp_providers.plugins.servicenow.instance import InstanceClient
from mcp_providers.plugins.servicenow.query import Filter, Order, build_query
from mcp_providers.plugins.servicenow.resources import MEMBERS, envelope
from mcp_providers.plugins.servicenow.schema import RECORD_SHAPE, raw

__all__ = ["active", "incident_envelope", "incident_numbers", "update_set", "update_set_ids", "update_sets"]


async def active(client: InstanceClient, table: str, fields: Sequence[str], label: str) -> str:
    """The body of an instance's list of active records of ``table`` (newest first, one page)."""
    query = build_query([Filter(field="active", value="true")],
                        [Order(field="sys_created_on", descending=True), Order(field="sys_id")])  # fmt: skip
    page = await client.list_records(table, query=query, fields=fields)
    records, total = page.records, page.total
    if table == "incident":  # each incident is also served on its own: list only those the caller may read
        records, total = _readable(records, total, client.name, MEMBERS["incidents"], "number")
    return envelope(instance=client.name, description=f"Active {label} on {client.name}, newest first",
                    data=records, record_count=len(records), total=total,
                    has_more=page.has_more, table=table, query=query, offset=page.offset,
                    limit=page.limit, next_offset=page.next_offset, hidden_records=page.hidden,
                    record_shape=RECORD_SHAPE)  # fmt: skip


async def update_sets(client: InstanceClient) -> str:
    """The body of ``servicenow://{instance}/update-sets``."""
    query = build_query([Filter(field="state", value="in progress")],
                        [Order(field="sys_updated_on", descending=True), Order(field="sys_id")])  # fmt: skip
    page = await client.list_records("sys_update_set", query=query, fields=client.settings.fields.update_sets)
    records, total = _readable(page.records, page.total, client.name, MEMBERS["update-sets"], "sys_id")
    return envelope(instance=client.name, description=f"Update sets in progress on {client.name}",
                    data=records, record_count=len(records), total=total,
                    has_more=page.has_more, table="sys_update_set", query=query, offset=page.offset,
                    limit=page.limit, next_offset=page.next_offset, hidden_records=page.hidden,
                    record_shape=RECORD_SHAPE)  # fmt: skip


async def update_set(client: InstanceClient, sys_id: str) -> str:
    """The body of ``servicenow://{instance}/update-sets/{sys_id}``: the set and its records by type."""
    settings = client.settings
    update_set = await client.get_record("sys_update_set", sys_id, fields=settings.fields.update_sets)
    # sys_id breaks ties so pages stay disjoint while we walk them
    query = build_query([Filter(field="update_set", value=sys_id)],
                        [Order(field="sys_created_on"), Order(field="sys_id")])  # fmt: skip
    budget = settings.update_set_record_budget
    records: list[dict[str, Any]] = []
    total: int | None = None
    pages = hidden = 0
    offset: int | None = 0
    # walk by the offsets asked for (ACLs leave holes in a page), up to budget positions
    while offset is not None and offset < budget:
        limit = min(settings.update_set_page_size, budget - offset)
        page = await client.list_records("sys_update_xml", query=query, fields=settings.fields.update_set_records,
                                         limit=limit, offset=offset)  # fmt: skip
        pages += 1
        total = page.total if page.total is not None else total
        records.extend(page.records)
        hidden += page.hidden
        offset = page.next_offset
    reached = offset if offset is not None else None
    if reached is None:
        missing: int | None = 0
    elif total is not None:
        missing = max(0, total - reached)
    else:
        missing = None
    if missing == 0:
        shortfall = None
    elif missing is None:
        shortfall = (f"stopped after {budget} record positions (update_set_record_budget); the instance sent "
                     f"no X-Total-Count, so how many more exist is unknown")  # fmt: skip
    else:
        shortfall = (f"{missing} of {total} sys_update_xml records were not fetched: the read stops at "
                     f"update_set_record_budget = {budget} records")  # fmt: skip
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(raw(record.get("type")) or "(no type)", []).append(record)
    components = [{"type": kind, "count": len(items), "records": items} for kind, items in sorted(groups.items())]
    data = {"update_set": update_set, "total_records": total, "fetched_records": len(records),
            "hidden_records": hidden, "missing_records": missing, "components": components}  # fmt: skip
    return envelope(instance=client.name, description=f"Update set {sys_id} on {client.name} with its records",
                    data=data, record_count=len(records), total=total, has_more=missing != 0,
                    table="sys_update_xml", query=query, pages=pages, record_budget=budget,
                    missing_records=missing, hidden_records=hidden, shortfall=shortfall,
                    record_shape=RECORD_SHAPE)  # fmt: skip


async def incident_envelope(client: InstanceClient, number: str) -> str:
    """The body of ``servicenow://{instance}/incidents/{number}``, read through ``client``.

    :raises NotFound: no such incident, or the instance's ACLs hide it from the client's user (the
        two are told apart by nobody: the message is the same).
    """
    query = build_query([Filter(field="number", value=number)])
    page = await client.list_records("incident", query=query, fields=client.settings.fields.incident, limit=1)
    if not page.records:
        raise NotFound(f"no incident {number} on instance {client.name!r}")
    return envelope(instance=client.name, description=f"Incident {number} on {client.name}",
                    data=page.records[0], record_count=1, total=1, has_more=False, table="incident",
                    record_shape=RECORD_SHAPE)  # fmt: skip


async def incident_numbers(client: InstanceClient, prefix: str) -> list[str]:
    """Up to 20 active incident numbers starting with ``prefix`` (already checked), read through ``client``."""
    filters = [Filter(field="active", value="true")]
    if prefix:
        filters.append(Filter(field="number", operator="STARTSWITH", value=prefix))
    page = await client.list_records("incident", query=build_query(filters, [Order(field="number")]),
                                     fields=("number",), limit=20)  # fmt: skip
    return [raw(r.get("number")) for r in page.records if raw(r.get("number"))]


async def update_set_ids(client: InstanceClient, prefix: str) -> list[str]:
    """Up to 20 sys_ids of update sets in progress starting with ``prefix`` (already checked), most
    recently updated first, read through ``client``."""
    filters = [Filter(field="state", value="in progress")]
    if prefix:
        filters.append(Filter(field="sys_id", operator="STARTSWITH", value=prefix))
    query = build_query(filters, [Order(field="sys_updated_on", descending=True)])
    page = await client.list_records("sys_update_set", query=query, fields=("sys_id",), limit=20)
    return [raw(r.get("sys_id")) for r in page.records if raw(r.get("sys_id"))]


def _readable(
    records: list[dict[str, Any]], total: int | None, instance: str, member: str, key: str
) -> tuple[list[dict[str, Any]], int | None]:
    """The records whose own resource (``member`` with ``instance`` and the record's ``key``) the
    caller may read, and ``total`` less those left out (``None`` stays ``None``)."""
    uri = member.replace("{instance}", instance)
    kept = [r for r in records if policy.allowed("read", uri.replace("{" + key + "}", raw(r.get(key)) or ""))]
    return kept, None if total is None else total - (len(records) - len(kept))
