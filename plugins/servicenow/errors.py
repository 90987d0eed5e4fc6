"""The ServiceNow plugin's errors: an unknown instance, a caller a per-user instance cannot act
for, and an instance's failure (:class:`ServiceNowError`, an ``UpstreamError``, JSON-RPC -32006)."""

from __future__ import annotations

from collections.abc import Callable

from mcp_providers.credentials import CredentialRefused
from mcp_providers.errors import UpstreamError

__all__ = ["NoVerifiedCaller", "ServiceNowError", "UnknownInstance", "clip"]

_MAX_TEXT = 500


class UnknownInstance(LookupError):
    """The instance name is not configured; the message lists the configured names."""


class NoVerifiedCaller(CredentialRefused):
    """A ``jwt_bearer`` instance was asked for by a caller it cannot act for (anonymous, ``local``
    with no ``local_user``, or a token without the user claim); nothing was sent to the instance."""


class ServiceNowError(UpstreamError):
    """A ServiceNow instance answered with an error, or could not be reached.

    :ivar instance: the instance name.
    :ivar status: the HTTP status, or ``None`` for a timeout or a connection failure.
    :ivar sn_message: ServiceNow's ``error.message``, if it sent one.
    :ivar sn_detail: ServiceNow's ``error.detail``, if it sent one.
    """

    def __init__(self, message: str, *, instance: str, status: int | None = None,
                 sn_message: str | None = None, sn_detail: str | None = None) -> None:  # fmt: skip
        data = {"instance": instance, "status": status, "message": sn_message, "detail": sn_detail}
        super().__init__(message, data={k: v for k, v in data.items() if v is not None})
        self.instance = instance
        self.status = status
        self.sn_message = sn_message
        self.sn_detail = sn_detail


def clip(text: str, masked: Callable[[str], str]) -> str:
    """``text`` (an instance's words) masked by ``masked`` (the pool's ``Redactor.text``), *then*
    cut to 500 characters (an ellipsis marks the cut): a secret the cut would split is whole when
    masked, so no head of it is left readable."""
    text = masked(text)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…"
