"""ServiceNow resources: read-only views of configured instances, under ``servicenow://``.

======================================================  ==================================================
URI                                                     content (``data``)
======================================================  ==================================================
``servicenow://instances``                              configured instances: name, url, description, auth type
``servicenow://tables``                                 the tables these resources and tools serve
``servicenow://{instance}/info``                        the instance's settings (no secrets) and its URIs
``servicenow://{instance}/incidents``                   active incidents, newest first (one page)
``servicenow://{instance}/incidents/{number}``          one incident by number, e.g. INC0010001
``servicenow://{instance}/update-sets``                 update sets in progress, most recently updated first
``servicenow://{instance}/update-sets/{sys_id}``        an update set and all its sys_update_xml records,
                                                        grouped by type with counts
``servicenow://{instance}/problems``                    active problems, newest first
``servicenow://{instance}/change-requests``             active change requests, newest first
======================================================  ==================================================

Records are normalised (:mod:`~mcp_providers.plugins.servicenow.schema`): reference and choice
fields are ``{"value": <raw>, "display_value": <label>}`` (e.g. ``assigned_to`` holds the user's
sys_id and name), every other field a plain string; ``metadata.record_shape`` says so. Lists are
sorted with ``sys_id`` as the last key, so pages are disjoint; ``metadata.hidden_records`` counts
rows the instance's ACLs removed from the page range read.

Every body is JSON in one envelope::

    {"metadata": {"timestamp": "2026-11-30T08:00:00+00:00", "instance": "dev",
                  "description": "Active incidents on dev, newest first",
                  "record_count": 8, "total": 8, "has_more": false, ...},
     "data": [...]}

Lists gather what other resources serve, and leave out what the caller may not read (each
declares its members): ``servicenow://instances`` lists an instance only if the caller may read
its ``servicenow://{instance}/info``, ``{instance}/incidents`` an incident only if it may read
``{instance}/incidents/{number}``, and ``{instance}/update-sets`` an update set only if it may read
``{instance}/update-sets/{sys_id}``; ``record_count`` and ``total`` count only what is listed.

On an instance with ``jwt_bearer`` auth every read, and every completion value, is fetched with
the caller's own ServiceNow user token (the instance's ACLs decide what each caller gets); a
caller with no verified principal is refused (``CredentialRefused``, -32003) before anything is sent. Such
an instance's resources cannot be watched: a poll would need one upstream identity per watcher,
and a change seen by one user's poll must not be announced to another. The live templates say
so in their list ``_meta`` (:data:`META_KEY`), ``{instance}/info`` carries ``per_user`` and
``subscribable: false`` with the reason, and a subscription is refused with it.

URI values are validated, never pasted into a query: ``instance`` must be configured (the error
lists the configured names), ``number`` and ``sys_id`` must match strict patterns, and anything
else is refused with ``InvalidParams`` (-32602) before any request reaches the instance.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from mcp_providers import policy
from mcp_providers.errors import InvalidParams, NotFound
from mcp_providers.models import Freshness, Members, Resource, ResourceTemplate
from mcp_providers.plugins.servicenow.icons import ICONS
from mcp_providers.providers import CompletionRequest, Content, Publisher, ReadRequest, ResourceProvider

if TYPE_CHECKING:  # with no instance configured none of these is imported (issue 43)
    from mcp_providers.plugins.servicenow import live
    from mcp_providers.plugins.servicenow.client import InstancePool
    from mcp_providers.plugins.servicenow.settings import InstanceSettings

__all__ = [
    "META_KEY",
    "PER_USER_UNWATCHABLE",
    "TABLES",
    "ServiceNowResources",
    "envelope",
]

MIME = "application/json"

TABLES: tuple[dict[str, Any], ...] = (
    {"table": "incident", "label": "Incident", "key_field": "number",
     "description": "Unplanned interruptions and service requests",
     "resources": ["servicenow://{instance}/incidents", "servicenow://{instance}/incidents/{number}"],
     "tools": ["servicenow_create_incident", "servicenow_add_comment", "servicenow_resolve_incident"]},
    {"table": "problem", "label": "Problem", "key_field": "number",
     "description": "Root causes of one or more incidents",
     "resources": ["servicenow://{instance}/problems"], "tools": []},
    {"table": "change_request", "label": "Change Request", "key_field": "number",
     "description": "Planned changes to services and infrastructure",
     "resources": ["servicenow://{instance}/change-requests"], "tools": []},
    {"table": "sys_update_set", "label": "Local Update Set", "key_field": "sys_id",
     "description": "Named sets of customizations moved between instances",
     "resources": ["servicenow://{instance}/update-sets", "servicenow://{instance}/update-sets/{sys_id}"],
     "tools": []},
    {"table": "sys_update_xml", "label": "Customer Update", "key_field": "sys_id",
     "description": "One customization recorded in an update set",
     "resources": ["servicenow://{instance}/update-sets/{sys_id}"], "tools": []},
)  # fmt: skip
"""Metadata of the tables served as resources (every table is reachable through the tools)."""

INFO = "servicenow://{instance}/info"
MEMBERS = {
    "incidents": "servicenow://{instance}/incidents/{number}",
    "update-sets": "servicenow://{instance}/update-sets/{sys_id}",
}
"""List path -> the template of the records it lists (its members)."""

META_KEY = "io.mcp-providers/servicenow"
"""List ``_meta`` key of the live templates: ``{"not_subscribable": {"instances", "reason"}}``
when some instances use ``jwt_bearer`` auth."""
PER_USER_UNWATCHABLE = (
    "this instance serves each caller as their own ServiceNow user (auth type jwt_bearer): its resources "
    "are read anew on every request and cannot be watched, since a poll runs as one user and a change it "
    "sees must not be announced to watchers whom the instance's ACLs may hide it from"
)

log = logging.getLogger(__name__)
_LIVE = Freshness.live()
_UNANNOUNCED = Freshness.live(subscribable=False)
_FIRST_SNAPSHOT_WAIT = 5.0
NUMBER_PREFIX = re.compile(r"^[A-Z]{0,10}[0-9]{0,12}$")
_SYS_ID_PREFIX = re.compile(r"^[0-9a-f]{0,32}$")


def envelope(*, instance: str | None, description: str, data: Any, record_count: int, total: int | None,
             has_more: bool, **extra: Any) -> str:  # fmt: skip
    """The JSON body every resource returns.

    :returns: ``{"metadata": {timestamp, instance, description, record_count, total, has_more,
        **extra}, "data": data}``, indented by 2 spaces.
    """
    metadata = {
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "instance": instance,
        "description": description,
        "record_count": record_count,
        "total": total,
        "has_more": has_more,
        **extra,
    }
    return json.dumps({"metadata": metadata, "data": data}, indent=2, ensure_ascii=False)


class ServiceNowResources(ResourceProvider):
    """Resources of every configured instance (see the module docstring for the URIs)."""

    name = "servicenow"
    prefixes = ("servicenow://",)

    def __init__(self, pool: InstancePool) -> None:
        self._pool = pool
        if pool.names:  # the 429 back-off goes through the publisher too, so replicas share it ([cluster])
            from mcp_providers.plugins.servicenow.live import SharedBackoff

            pool.backoff = SharedBackoff(pool.backoff, lambda: self.publisher)
        self.pollers: dict[str, live.Poller] = {}
        """Instance name -> its poller, while the server runs."""

    def resources(self) -> Sequence[Resource]:
        return [
            Resource(uri="servicenow://instances", name="servicenow-instances", title="ServiceNow instances",
                     description="Configured ServiceNow instances: name, URL, description, auth type (no secrets).",
                     mime_type=MIME, icons=ICONS,
                     # With no instance configured there is no {instance}/info to gather, nor a member to name.
                     members=Members(uris=(INFO,), filtered=True) if self._pool.names else None),
            Resource(uri="servicenow://tables", name="servicenow-tables", title="ServiceNow tables",
                     description="Metadata of the ServiceNow tables served as resources.", mime_type=MIME, icons=ICONS),
        ]  # fmt: skip

    def templates(self) -> Sequence[ResourceTemplate]:
        """The per-instance templates; none when no instance is configured (logged once)."""
        names = tuple(self._pool.names)
        if not names:
            log.info(
                "servicenow: no instances configured ([[plugins.servicenow.instances]] is empty): serving "
                "servicenow://instances and servicenow://tables only, no instance templates or tools"
            )
            return []

        per_user = [n for n in names if self._pool.settings(n).per_user]
        unwatched = {META_KEY: {"not_subscribable": {"instances": per_user, "reason": PER_USER_UNWATCHABLE}}}

        def template(path: str, name: str, title: str, description: str) -> ResourceTemplate:
            freshness = _UNANNOUNCED if path == "info" else _LIVE  # info changes only with the configuration
            member = MEMBERS.get(path)
            meta = unwatched if per_user and path != "info" else None
            return ResourceTemplate(uri_template=f"servicenow://{{instance}}/{path}", name=name, title=title,
                                    description=description, mime_type=MIME, icons=ICONS, freshness=freshness,
                                    completions={"instance": names}, meta=meta,
                                    members=Members(uris=(member,), filtered=True) if member else None)  # fmt: skip

        return [
            template("info", "servicenow-instance-info", "ServiceNow instance",
                     "One instance's settings (no secrets) and the URIs it serves."),
            template("incidents", "servicenow-incidents", "Active incidents",
                     "Active incidents of an instance, newest first (one page; metadata.total counts all)."),
            template("incidents/{number}", "servicenow-incident", "Incident",
                     "One incident by number, e.g. INC0010001."),
            template("update-sets", "servicenow-update-sets", "Update sets in progress",
                     "Update sets in progress, most recently updated first."),
            template("update-sets/{sys_id}", "servicenow-update-set", "Update set",
                     "An update set and all its sys_update_xml records grouped by type with counts; "
                     "any records not fetched are counted in metadata.missing_records."),
            template("problems", "servicenow-problems", "Active problems", "Active problems, newest first."),
            template("change-requests", "servicenow-change-requests", "Active change requests",
                     "Active change requests, newest first."),
        ]  # fmt: skip

    def check_watch(self, declaration: Resource | ResourceTemplate, params: Mapping[str, str]) -> None:
        """Refuse watching an instance that is not configured or a malformed number or sys_id."""
        if "instance" in params and params["instance"] not in self._pool.names:
            readable = self._readable_instances()
            raise InvalidParams(f"no ServiceNow instance {params['instance'][:64]!r} is configured "
                                f"(configured: {', '.join(readable) or 'none you may read'})",
                                data={"instances": readable})  # fmt: skip
        if "instance" in params and self._pool.settings(params["instance"]).per_user:
            raise InvalidParams(f"servicenow://{params['instance']}/...: {PER_USER_UNWATCHABLE}; read it again "
                                f"instead", data={"instance": params["instance"], "subscribable": False})  # fmt: skip
        if "number" not in params and "sys_id" not in params:
            return
        from mcp_providers.plugins.servicenow.query import QueryError, check_number, check_sys_id

        try:
            if "number" in params:
                check_number(params["number"])
            if "sys_id" in params:
                check_sys_id(params["sys_id"])
        except QueryError as exc:
            raise InvalidParams(str(exc)) from None

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open the instances' clients and poll each (the first snapshot is taken before serving)."""
        if not self._pool.names:  # nothing to open, poll or write to
            yield
            return
        from mcp_providers.plugins.servicenow import live

        async with self._pool.opened(), anyio.create_task_group() as pollers:
            live.register(self._pool, self._publish)
            started = []
            for name in self._pool.names:
                settings = self._pool.settings(name)
                if not settings.live_poll or settings.per_user:  # per-user instances are not watched
                    continue
                self.pollers[name] = live.Poller(self._pool, name, self._publish)
                started.append(anyio.Event())
                pollers.start_soon(self.pollers[name].run, started[-1])
            with anyio.move_on_after(_FIRST_SNAPSHOT_WAIT):  # an unreachable instance must not stall start-up
                for event in started:
                    await event.wait()
            try:
                yield
            finally:
                pollers.cancel_scope.cancel()

    def _publish(self) -> Publisher | None:
        return self.publisher

    async def complete(self, template: ResourceTemplate, request: CompletionRequest) -> Sequence[str]:
        """Values for a template variable.

        - ``instance``: configured names starting with the typed text (no request sent);
        - ``number`` (incident template): up to 20 active incident numbers of the instance chosen in
          the context, starting with the typed text;
        - ``sys_id`` (update-set template): up to 20 sys_ids of update sets in progress.

        Typed text that could not be part of a valid value gives no values and sends no request.

        :raises mcp_providers.plugins.servicenow.errors.ServiceNowError: the instance failed.
        """
        if request.argument == "instance":
            typed = request.value.casefold()
            return [n for n in self._pool.names if n.casefold().startswith(typed)]
        instance = request.context.get("instance", "")
        if instance not in self._pool.names:
            return []
        from mcp_providers.plugins.servicenow.reads import incident_numbers, update_set_ids

        if template.name == "servicenow-incident" and request.argument == "number":
            prefix = request.value.upper()
            if not NUMBER_PREFIX.fullmatch(prefix):
                return []
            return await incident_numbers(self._pool.client_for(instance, request), prefix)
        if template.name == "servicenow-update-set" and request.argument == "sys_id":
            if not _SYS_ID_PREFIX.fullmatch(request.value):
                return []
            return await update_set_ids(self._pool.client_for(instance, request), request.value)
        return await super().complete(template, request)

    async def read(self, request: ReadRequest) -> Content:
        """Read one resource (the core runs it in the read-only scope: no write reaches an instance).

        :raises InvalidParams: a URI value is malformed (number, sys_id) or names no configured
            instance; no request is sent to any instance.
        :raises NotFound: the record does not exist.
        :raises mcp_providers.plugins.servicenow.errors.ServiceNowError: the instance failed.
        """
        return await self._read(request)

    async def _read(self, request: ReadRequest) -> Content:
        name = request.resource.name
        if name == "servicenow-instances":
            return Content(text=self._instances())
        if name == "servicenow-tables":
            return Content(text=envelope(instance=None, description="Tables served as ServiceNow resources",
                                         data=list(TABLES), record_count=len(TABLES), total=len(TABLES),
                                         has_more=False))  # fmt: skip
        instance = self._instance(request)
        from mcp_providers.plugins.servicenow import reads
        from mcp_providers.plugins.servicenow.query import QueryError, check_number, check_sys_id

        try:
            if name == "servicenow-instance-info":
                return Content(text=self._info(instance))
            client = self._pool.client_for(instance, request)
            fields = client.settings.fields
            if name == "servicenow-incidents":
                return Content(text=await reads.active(client, "incident", fields.incidents, "incidents"))
            if name == "servicenow-problems":
                return Content(text=await reads.active(client, "problem", fields.problems, "problems"))
            if name == "servicenow-change-requests":
                return Content(text=await reads.active(client, "change_request", fields.change_requests,
                                                       "change requests"))  # fmt: skip
            if name == "servicenow-incident":
                number = check_number(request.params.get("number", ""))
                return Content(text=await reads.incident_envelope(client, number))
            if name == "servicenow-update-sets":
                return Content(text=await reads.update_sets(client))
            if name == "servicenow-update-set":
                sys_id = check_sys_id(request.params.get("sys_id", ""))
                return Content(text=await reads.update_set(client, sys_id))
        except QueryError as exc:
            raise InvalidParams(f"{request.uri}: {exc}", data={"uri": request.uri}) from None
        except NotFound as exc:
            raise NotFound(exc.message, data={"uri": request.uri, **(exc.data or {})}) from None
        raise NotFound(f"no ServiceNow resource is declared as {name!r}", data={"uri": request.uri})

    # -- one method per resource

    def _instance(self, request: ReadRequest) -> str:
        instance = request.params.get("instance", "")
        if instance not in self._pool.names:
            readable = self._readable_instances()  # a refusal never names an instance the caller may not read
            configured = ", ".join(readable) or "none you may read"
            data = {"uri": request.uri, "instances": readable}
            same = [name for name in readable if name.lower() == instance.lower()]
            use = f"; use {same[0]!r} (names are compared as written)" if len(same) == 1 else ""
            message = f"{request.uri}: unknown instance {instance!r}{use}; configured instances: {configured}"
            raise InvalidParams(message, data=data)
        return instance

    def _readable_instances(self) -> list[str]:
        """The configured instances whose ``servicenow://{instance}/info`` the caller may read."""
        return [n for n in self._pool.names if policy.allowed("read", INFO.replace("{instance}", n))]

    def _instances(self) -> str:
        data = []
        for name in self._readable_instances():
            s = self._pool.settings(name)
            data.append(
                {"name": s.name, "url": s.url, "description": s.description, "auth_type": s.auth.type, **_per_user(s)}
            )
        return envelope(instance=None, description="Configured ServiceNow instances", data=data,
                        record_count=len(data), total=len(data), has_more=False)  # fmt: skip

    def _info(self, instance: str) -> str:
        s = self._pool.settings(instance)
        data = {
            "instance": {"name": s.name, "url": s.url, "description": s.description, "auth_type": s.auth.type,
                         **_per_user(s)},
            "limits": {"page_size": s.page_size, "update_set_page_size": s.update_set_page_size,
                       "update_set_record_budget": s.update_set_record_budget, "timeout_seconds": s.timeout_seconds,
                       "max_retries": s.max_retries},
            "resources": [t.uri_template.replace("{instance}", instance) for t in self.templates()],
            "tables": [t["table"] for t in TABLES],
        }  # fmt: skip
        return envelope(instance=instance, description=f"ServiceNow instance {instance}", data=data,
                        record_count=1, total=1, has_more=False)  # fmt: skip


def _per_user(settings: InstanceSettings) -> dict[str, Any]:
    """What an instance listing adds for a ``jwt_bearer`` instance (nothing for the others)."""
    if not settings.per_user:
        return {}
    return {"per_user": True, "subscribable": False, "subscribable_reason": PER_USER_UNWATCHABLE}
