"""The Table API and the Aggregate API of one emulator, and the Starlette app serving them.

Every request passes :meth:`TableApi.guard` first: the caller is identified, a queued fault or
the rate-limit rule may answer instead, and unauthenticated requests get 401. Then:
``GET|POST /api/now/table/{table}`` (:meth:`TableApi.collection`),
``GET|PUT|PATCH|DELETE /api/now/table/{table}/{sys_id}`` (:meth:`TableApi.record`), both also
under ``/api/now/v2/table``, and ``GET /api/now/stats/{table}`` (:meth:`TableApi.stats`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mcp_providers.plugins.servicenow.emulator.auth import Caller, TokenEndpoint, identify
from mcp_providers.plugins.servicenow.emulator.encoded_query import ParsedQuery, QuerySyntaxError, parse_encoded_query
from mcp_providers.plugins.servicenow.emulator.faults import LoggedRequest, apply_fault, error
from mcp_providers.plugins.servicenow.emulator.store import Record, Store

if TYPE_CHECKING:
    from mcp_providers.plugins.servicenow.emulator.app import Emulator

__all__ = ["TableApi", "build_app"]


def build_app(emulator: Emulator, store: Store) -> Starlette:
    """The emulator's ASGI app: the Table API (two prefixes), the Aggregate API and the token endpoint."""
    api = TableApi(emulator, store)
    routes = []
    for prefix in ("/api/now/table", "/api/now/v2/table"):
        routes += [
            Route(prefix + "/{table}", api.collection, methods=["GET", "POST"]),
            Route(prefix + "/{table}/{sys_id}", api.record, methods=["GET", "PUT", "PATCH", "DELETE"]),
        ]
    routes.append(Route("/api/now/stats/{table}", api.stats, methods=["GET"]))
    routes.append(Route("/oauth_token.do", TokenEndpoint(emulator, store).answer, methods=["POST"]))
    return Starlette(routes=routes)


async def _aiter(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def _body(request: Request) -> dict[str, Any] | None:
    """The JSON object of a write, or ``None`` when the body is not one."""
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        return None
    if isinstance(body, list):  # the Table API uses only the first record of a list
        body = body[0] if body else {}
    return body if isinstance(body, dict) else None


class TableApi:
    """The Table and Aggregate API endpoints of one emulator (``emulator`` for its settings and
    modes, ``store`` for its data)."""

    def __init__(self, emulator: Emulator, store: Store) -> None:
        self.emulator = emulator
        self.store = store

    # -- shared steps

    def log(self, request: Request, caller: Caller, status: int, body: Any = None, fault: bool = False) -> None:
        """Record one answered request."""
        self.store.log(LoggedRequest(method=request.method, path=request.url.path, query=dict(request.query_params),
                                     principal=caller.principal, authenticated=caller.ok, status=status, body=body,
                                     fault=fault))  # fmt: skip

    async def guard(self, request: Request) -> tuple[Response | None, Caller]:
        """Identify the caller, apply any queued fault or rate-limit rule, then refuse
        unauthenticated requests."""
        caller = identify(self.emulator, self.store, request)
        fault = self.store.next_fault("table")
        answered = await apply_fault(fault)
        if answered is not None and answered.status_code == 401 and self.emulator.echo_authorization:
            answered = self._unauthorized(request, fault.message if fault else None)
        answered = answered or self._rate_limited()
        if answered is not None:
            self.log(request, caller, answered.status_code, fault=True)
            return answered, caller
        if not caller.ok:
            response = self._unauthorized(request)
            self.log(request, caller, 401)
            return response, caller
        return None, caller

    def _rate_limited(self) -> Response | None:
        """A 429 answer while the rate-limit rule's window is open, else ``None``."""
        left = self.store.rate_limited()
        if left is None:
            return None
        headers = {"Retry-After": str(max(1, math.ceil(left))), "X-RateLimit-Limit": "1",
                   "X-RateLimit-Reset": str(int(time.time() + left)), "X-RateLimit-Rule": "e" * 32}  # fmt: skip
        return error(429, headers=headers)

    def _unauthorized(self, request: Request, message: str | None = None) -> JSONResponse:
        detail = None
        if self.emulator.echo_authorization:
            echoed = {k: request.headers[k] for k in ("authorization", "x-sn-apikey") if k in request.headers}
            detail = "Rejected request headers: " + "; ".join(f"{k}: {v}" for k, v in echoed.items())
        return error(401, message, detail)

    def _rows(self, request: Request, caller: Caller) -> tuple[str, list[Record] | Response]:
        """The table named in the path and its rows, or the 400 answer (logged) for an unknown table."""
        table = request.path_params["table"]
        rows = self.store.tables.get(table)
        if rows is None:
            self.log(request, caller, 400)
            return table, error(400, f"Invalid table {table}", None)
        return table, rows

    def _query(self, request: Request, caller: Caller) -> ParsedQuery | Response:
        """``sysparm_query`` parsed, or the 400 answer (logged) when it cannot be."""
        try:
            return parse_encoded_query(request.query_params.get("sysparm_query", ""))
        except QuerySyntaxError as exc:
            self.log(request, caller, 400)
            return error(400, "Invalid query", str(exc))

    def _paging(self, request: Request, caller: Caller) -> tuple[int, int] | Response:
        """``(limit, offset)`` (the limit capped at ``default_limit``), or the 400 answer (logged)."""
        params, default = request.query_params, self.emulator.default_limit
        try:
            limit = int(params.get("sysparm_limit", default))
            offset = int(params.get("sysparm_offset", 0))
            if limit < 0 or offset < 0:
                raise ValueError
        except ValueError:
            self.log(request, caller, 400)
            return error(400, "Invalid parameter", "sysparm_limit and sysparm_offset must be non-negative integers")
        return min(limit, default), offset

    # -- endpoints

    async def collection(self, request: Request) -> Response:
        """``GET`` (a page of a query) or ``POST`` (create) on ``/api/now/table/{table}``."""
        refused, caller = await self.guard(request)
        if refused is not None:
            return refused
        table, rows = self._rows(request, caller)
        if isinstance(rows, Response):
            return rows
        if request.method == "POST":
            return await self._create(request, table, caller)
        paging = self._paging(request, caller)
        if isinstance(paging, Response):
            return paging
        limit, offset = paging
        parsed = self._query(request, caller)
        if isinstance(parsed, Response):
            return parsed
        store, base_url = self.store, self.emulator.base_url
        with store.lock:
            matched = store.select(table, rows, parsed, caller.scope)
            hidden = store.hidden.get(table, set())
            # hide() ACLs apply after the page is cut: hidden rows leave holes but still count
            page = [row for row in matched[offset : offset + limit] if row.get("sys_id") not in hidden]
            result = [store.render(table, row, request.query_params, base_url, caller.scope) for row in page]
        headers = self._page_headers(request, table, offset, limit, len(matched))
        self.log(request, caller, 200)
        if self.emulator.stream_answers:
            body = json.dumps({"result": result}).encode()
            chunks = (body[i : i + 65536] for i in range(0, len(body), 65536))
            return StreamingResponse(_aiter(chunks), headers=headers, media_type="application/json")
        return JSONResponse({"result": result}, headers=headers)

    def _page_headers(self, request: Request, table: str, offset: int, limit: int, total: int) -> dict[str, str]:
        """``X-Total-Count`` and ``Link`` as the modes and the request's ``sysparm_*`` ask."""
        params, emulator = request.query_params, self.emulator
        headers: dict[str, str] = {}
        if params.get("sysparm_no_count", "false") != "true" and emulator.send_total_count:
            headers["X-Total-Count"] = str(total)
        suppress = params.get("sysparm_suppress_pagination_header", "false") == "true" or not emulator.send_link_header
        if not suppress and limit and total > limit:
            headers["Link"] = self._link_header(request, offset, limit, total)
        return headers

    def _link_header(self, request: Request, offset: int, limit: int, total: int) -> str:
        def url(at: int) -> str:
            query = dict(request.query_params) | {"sysparm_offset": str(at), "sysparm_limit": str(limit)}
            return f"{self.emulator.base_url}{request.url.path}?{urlencode(query)}"

        links = [f'<{url(0)}>;rel="first"']
        if offset > 0:
            links.append(f'<{url(max(0, offset - limit))}>;rel="prev"')
        if offset + limit < total:
            links.append(f'<{url(offset + limit)}>;rel="next"')
        links.append(f'<{url(((total - 1) // limit) * limit)}>;rel="last"')
        return ",".join(links)

    async def stats(self, request: Request) -> Response:
        """``GET /api/now/stats/{table}`` (the Aggregate API): ``sysparm_count``, ``sysparm_group_by``
        (comma-separated fields), ``sysparm_query``, ``sysparm_display_value`` for group values."""
        refused, caller = await self.guard(request)
        if refused is not None:
            return refused
        table, rows = self._rows(request, caller)
        if isinstance(rows, Response):
            return rows
        parsed = self._query(request, caller)
        if isinstance(parsed, Response):
            return parsed
        params, store, scope = request.query_params, self.store, caller.scope
        group_by = [f.strip() for f in params.get("sysparm_group_by", "").split(",") if f.strip()]
        display = params.get("sysparm_display_value", "false").lower() in ("true", "all")
        result: Any
        with store.lock:
            matched = store.select(table, rows, parsed, scope)
            counts: dict[tuple[str, ...], int] = {}
            for row in matched:
                key = tuple(store.lookup(table, row, name, scope) or "" for name in group_by)
                counts[key] = counts.get(key, 0) + 1
            result = [
                {"stats": {"count": str(count)}, "groupby_fields": [
                    {"field": name, "value": store.display(table, name, value, scope) if display else value}
                    for name, value in zip(group_by, key, strict=True)]}
                for key, count in counts.items()
            ] if group_by else {"stats": {"count": str(len(matched))}}  # fmt: skip
        self.log(request, caller, 200)
        return JSONResponse({"result": result})

    async def record(self, request: Request) -> Response:
        """``GET|PUT|PATCH|DELETE /api/now/table/{table}/{sys_id}``."""
        refused, caller = await self.guard(request)
        if refused is not None:
            return refused
        table, rows = self._rows(request, caller)
        if isinstance(rows, Response):
            return rows
        sys_id, store, base_url = request.path_params["sys_id"], self.store, self.emulator.base_url
        with store.lock:
            hidden = store.hidden.get(table, set())
            row = next((r for r in rows if r.get("sys_id") == sys_id and sys_id not in hidden), None)
            if row is not None and not store.visible(table, row, caller.scope):
                row = None  # a row the user may not read answers exactly as a missing one
        if row is None:
            self.log(request, caller, 404)
            return error(404)
        if request.method == "GET":
            with store.lock:
                rendered = store.render(table, row, request.query_params, base_url, caller.scope)
            self.log(request, caller, 200)
            return JSONResponse({"result": rendered})
        if request.method == "DELETE":
            with store.lock:
                rows.remove(row)
            self.log(request, caller, 204)
            return Response(status_code=204)
        values = await _body(request)
        if values is None:
            self.log(request, caller, 400)
            return error(400, "Invalid JSON body", "The request body must be a JSON object")
        with store.lock:
            store.write(table, row, values, scope=caller.scope, principal=caller.principal)
            rendered = store.render(table, row, request.query_params, base_url, caller.scope)
        self.log(request, caller, 200, body=values)
        return JSONResponse({"result": rendered})

    async def _create(self, request: Request, table: str, caller: Caller) -> Response:
        values = await _body(request)
        if values is None:
            self.log(request, caller, 400)
            return error(400, "Invalid JSON body", "The request body must be a JSON object")
        store = self.store
        with store.lock:
            row = store.new_row(table, caller.scope)
            store.write(table, row, values, scope=caller.scope, principal=caller.principal)
            store.tables[table].append(row)
            rendered = store.render(table, row, request.query_params, self.emulator.base_url, caller.scope)
        self.log(request, caller, 201, body=values)
        return JSONResponse({"result": rendered}, status_code=201)
