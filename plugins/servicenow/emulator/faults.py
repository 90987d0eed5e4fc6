"""What the emulator records of each request, the faults a test queues, and ServiceNow's error envelope.

Failures use ServiceNow's envelope ``{"error": {"message": ..., "detail": ...}, "status": "failure"}``
(:func:`error`); a queued :class:`Fault` is turned into its answer by :func:`apply_fault`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from starlette.responses import JSONResponse, Response

__all__ = ["Fault", "FaultScope", "LoggedRequest", "apply_fault", "error"]

FaultScope = Literal["table", "oauth", "any"]


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request the emulator received.

    :param principal: the identity presented, never a secret: ``basic:<user>``,
        ``oauth:<client id>`` or ``oauth:<client id>/<user>``, ``jwt:<client id>/<user_name>``
        (a JWT bearer grant's user token, and the grant that issued it), ``apikey:<label>``,
        ``bearer:unknown``, ``apikey:unknown``, or ``None`` when no credentials were sent.
    :param authenticated: whether those credentials were accepted.
    :param status: the status code answered.
    :param fault: whether a queued :class:`Fault` produced the answer.
    :param detail: for ``/oauth_token.do``, why a grant was refused (which check failed; never a
        secret), which the answer itself does not say.
    """

    method: str
    path: str
    query: Mapping[str, str]
    principal: str | None
    authenticated: bool
    status: int
    body: Any = None
    fault: bool = False
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Fault:
    """What to do to one request instead of (or before) answering it normally.

    :param status: answer with this status and ServiceNow's error envelope (``None``: answer
        normally, after any delay).
    :param retry_after: value of the ``Retry-After`` header, e.g. ``"1"`` (with ``status=429``).
    :param delay_seconds: wait this long before answering (a slow response).
    :param malformed: answer 200 with a body that is not JSON.
    :param truncated: answer 200 declaring a longer body than it sends, then drop the connection.
    :param message: the envelope's ``error.message`` (a default per status otherwise).
    :param detail: the envelope's ``error.detail``.
    :param scope: which requests it applies to: ``"table"`` (Table API), ``"oauth"``
        (``/oauth_token.do``) or ``"any"``.
    """

    status: int | None = None
    retry_after: str | None = None
    delay_seconds: float = 0.0
    malformed: bool = False
    message: str | None = None
    detail: str | None = None
    scope: FaultScope = "table"
    truncated: bool = False


_DEFAULT_MESSAGES = {
    400: ("Bad Request", "The request could not be understood"),
    401: ("User Not Authenticated", "Required to provide Auth information"),
    403: ("Operation Failed", "ACL restricts the operation"),
    404: ("No Record found", "Record doesn't exist or ACL restricts the record retrieval"),
    429: ("Rate limit exceeded", "Too many requests for this user; retry later"),
    500: ("Internal Server Error", "An unexpected error occurred"),
    503: ("Service Unavailable", "The instance is unavailable"),
}


def error(status: int, message: str | None = None, detail: str | None = None,
          headers: Mapping[str, str] | None = None) -> JSONResponse:  # fmt: skip
    """ServiceNow's error envelope with ``status``; ``message``/``detail`` default per status."""
    default_message, default_detail = _DEFAULT_MESSAGES.get(status, ("Error", None))
    body = {"error": {"message": message or default_message, "detail": detail or default_detail}, "status": "failure"}
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


async def apply_fault(fault: Fault | None) -> Response | None:
    """Wait ``fault.delay_seconds``, then the answer ``fault`` asks for (``None``: answer normally)."""
    if fault is None:
        return None
    if fault.delay_seconds:
        await anyio.sleep(fault.delay_seconds)
    if fault.malformed:
        return Response('{"result": [ {"sys_id": ', status_code=200, media_type="application/json")
    if fault.truncated:
        body = b'{"result": [ {"sys_id": "0123'
        headers = {"content-length": str(len(body) + 4096)}
        return Response(body, status_code=200, media_type="application/json", headers=headers)
    if fault.status is not None:
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
        return error(fault.status, fault.message, fault.detail, headers)
    return None
