"""ServiceNow tools: table queries and record reads, and the only writes this plugin makes.

==============================  ===========  ==================================================
tool                            effects      what it does
==============================  ===========  ==================================================
``servicenow_query_table``      none         query any table: structured filters, fields, limit, offset, order
``servicenow_get_record``       none         one record by table and sys_id
``servicenow_create_incident``  additive     POST a new incident
``servicenow_update_record``    destructive  PATCH the given fields of one record (never PUT)
``servicenow_add_comment``      additive     append a comment or work note (journal fields)
``servicenow_resolve_incident`` destructive  set an incident to Resolved (state 6) with close code and notes
==============================  ===========  ==================================================

Every tool names its instance. Filters become an encoded query through
:func:`~mcp_providers.plugins.servicenow.query.build_query` only. Results are structured
(the ``*Out`` models) and carry a ``resource_link`` to the record's resource where one exists
(``servicenow://{instance}/incidents/{number}``, ``servicenow://{instance}/update-sets/{sys_id}``).

Records are normalised (:mod:`~mcp_providers.plugins.servicenow.schema`): reference and choice
fields are ``{"value": <raw>, "display_value": <label>}``, every other field a plain string,
whatever ``display_value`` asks (it is accepted for compatibility and changes nothing).
Queries sort with ``sys_id`` as the last key, so following ``next_offset`` gives disjoint pages;
``next_offset`` is the offset asked plus the page size (ACLs may leave fewer rows in a page than
asked: ``hidden_records`` counts them), or the instance's ``Link`` next page.

Dot-walked fields, filters and sort keys (``caller_id.email``) are authorized against each table
they reach (``read`` on ``servicenow://{instance}/sys_user``); a dot-walk through a field not known
to be a reference (:data:`~.schema.REFERENCE_FIELDS`) is refused. A record also served as a
resource (an incident, an update set) is left out of a query, and refused by
``servicenow_get_record``, when the caller may not read that resource (its key field is fetched
to ask, and returned only when asked for); ``record_count`` and ``total`` count what is returned.

On an instance with ``jwt_bearer`` auth each call runs as the caller's own ServiceNow user (their
token from the credential broker): the instance's ACLs decide what it reads, its audit fields and
journal name that user for what it writes. A caller with no verified principal is refused
(``CredentialRefused``, a ``Denied``: -32003) before anything is sent; there is no fallback to a
service account. A grant the instance refuses is the same error, naming the user and what to check.

Every upstream failure is a tool failure (``isError: true``) with a redacted message saying what
failed and what to do: unknown instance, malformed value, no such record, ServiceNow refusing
(400/401/403), timeouts, refused connections, 5xx, exhausted rate limits (with the wait), bad
JSON, answers over ``max_response_bytes``. A policy refusal stays a JSON-RPC error (-32003).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from mcp_providers.models import Tool
from mcp_providers.providers import ToolCall, ToolProvider, ToolResult

if TYPE_CHECKING:
    from mcp_providers.plugins.servicenow.client import InstancePool

__all__ = ["ServiceNowTools"]

_MOVED = frozenset(
    ("AddCommentIn", "CommentOut", "CreateIncidentIn", "GetRecordIn", "QueryTableIn", "QueryTableOut",
     "RecordOut", "ResolveIncidentIn", "UpdateRecordIn", "record_uri")
)  # fmt: skip
"""Names of :mod:`~mcp_providers.plugins.servicenow.tool_calls` still read here (``tools.QueryTableIn``)."""


def __getattr__(name: str) -> object:
    # The models and calls are imported with the first instance (issue 43); their old names here still work.
    if name in _MOVED:
        from mcp_providers.plugins.servicenow import tool_calls

        return getattr(tool_calls, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ServiceNowTools(ToolProvider):
    """The ServiceNow tools (see the module docstring); none when no instance is configured, and
    then nothing of theirs is imported (:mod:`~mcp_providers.plugins.servicenow.tool_calls`)."""

    name = "servicenow-tools"

    def __init__(self, pool: InstancePool) -> None:
        self._pool = pool

    def tools(self) -> Sequence[Tool]:
        """The six tools; none when no instance is configured."""
        if not self._pool.names:
            return []
        from mcp_providers.plugins.servicenow.tool_calls import declared

        return declared()

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self._pool.opened():
            yield

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one tool (:func:`~mcp_providers.plugins.servicenow.tool_calls.run`).

        :raises ToolFailure: unknown instance, malformed value, no such record, or ServiceNow
            refused the operation (400, 403, 404).
        :raises mcp_providers.errors.Denied: the policy refuses ``read`` (read-only tools) or ``call``
            (the others) on ``servicenow://{instance}/{table}``.
        :raises mcp_providers.plugins.servicenow.errors.ServiceNowError: timeout, 5xx, rejected
            credentials or exhausted rate limit.
        """
        from mcp_providers.plugins.servicenow.tool_calls import run

        return await run(self._pool, call, self.name)
