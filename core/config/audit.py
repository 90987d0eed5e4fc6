"""``[server.audit_sinks]`` and ``[server.audit]``: where audit records are shipped (file, syslog,
webhook, OTLP logs) and how."""

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, field_validator, model_validator

from mcp_providers.config.environment import ENV_NAME

__all__ = [
    "SYSLOG_FACILITIES",
    "AuditSettings",
    "AuditSink",
    "FileSinkSettings",
    "OtlpLogsSinkSettings",
    "SyslogFacility",
    "SyslogSinkSettings",
    "WebhookSinkSettings",
]


SYSLOG_FACILITIES = {
    "kern": 0, "user": 1, "mail": 2, "daemon": 3, "auth": 4, "syslog": 5, "lpr": 6, "news": 7,
    "uucp": 8, "cron": 9, "authpriv": 10, "ftp": 11, "ntp": 12, "audit": 13, "alert": 14, "clock": 15,
    "local0": 16, "local1": 17, "local2": 18, "local3": 19, "local4": 20, "local5": 21, "local6": 22, "local7": 23,
}  # fmt: skip
"""Syslog facility names and their codes (RFC 5424 section 6.2.1, table 1; ``audit`` is "log audit")."""

SyslogFacility = Literal[
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp", "ntp",
    "audit", "alert", "clock", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
]  # fmt: skip


class _Shipped(BaseModel):
    """What every sink fed from the in-memory queue shares: its bound and its retry back-off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queue_size: int = Field(default=10_000, ge=1, le=1_000_000)
    """Audit lines held in memory while the sink is slow or down; a line that finds the queue full
    is dropped and counted (``mcp_providers_audit_dropped_total{sink}``)."""
    retries: int = Field(default=5, ge=0, le=100)
    """Attempts after the first before a line (or webhook batch) may be given up, dropped and
    counted: it is kept, and tried again, for as long as the queue has room."""
    retry_seconds: float = Field(default=0.5, gt=0, le=3600)
    """Back-off before the first retry, in seconds; doubled on each further retry."""
    max_retry_seconds: float = Field(default=30.0, gt=0, le=3600)
    """Longest back-off between two attempts, in seconds."""


class FileSinkSettings(BaseModel):
    """A JSON-lines file, written as the request ends (what ``[server] audit_log`` is)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use (issue 43)

    type: Literal["file"]
    name: str = Field(default="file", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """The sink's name in the drop metric and the log (unique among the sinks)."""
    path: Path
    """The file; appended to, created with its folder if missing."""

    @field_validator("path")
    @classmethod
    def _a_file(cls, value: Path) -> Path:
        if value.is_dir():
            raise ValueError(f"{value} is a directory; name a file such as {value / 'audit.jsonl'}")
        return value


class SyslogSinkSettings(_Shipped):
    """Syslog: one RFC 5424 message per audit line, its MSG the line's JSON.

    ``transport``: ``udp`` (one datagram each), ``tcp`` (octet-counting framing, RFC 6587 section
    3.4.1) or ``unix`` (datagrams to the socket ``socket``, e.g. ``/dev/log``).
    """

    model_config = ConfigDict(defer_build=True)  # built at first use (issue 43)

    type: Literal["syslog"]
    name: str = Field(default="syslog", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """The sink's name in the drop metric and the log (unique among the sinks)."""
    transport: Literal["udp", "tcp", "unix"] = "udp"
    host: str = "127.0.0.1"
    """The syslog server's host (``udp``, ``tcp``)."""
    port: int = Field(default=514, ge=1, le=65_535)
    """The syslog server's port (``udp``, ``tcp``)."""
    socket: Path | None = None
    """The Unix datagram socket (``unix``; required there)."""
    facility: SyslogFacility = "auth"
    """The facility of every message (RFC 5424 names: ``auth``, ``authpriv``, ``audit``, ``local0``...)."""
    app_name: str = Field(default="mcp-providers", pattern=r"^[!-~]{1,48}$")
    """RFC 5424 APP-NAME: 1 to 48 printable ASCII characters, no spaces."""

    @model_validator(mode="after")
    def _socket_for_unix(self) -> "SyslogSinkSettings":
        if self.transport == "unix" and self.socket is None:
            raise ValueError('transport "unix" needs socket, the path of the syslog socket, e.g. socket = "/dev/log"')
        return self


class WebhookSinkSettings(_Shipped):
    """An HTTP webhook: batches of audit lines POSTed as a JSON array.

    Each batch has an ``Idempotency-Key`` header (unique per batch, the same on its retries) and
    ``X-Audit-Sequence`` (1, 2, ... per sink and process); a batch is resent only after an attempt
    that got no 2xx answer.
    """

    model_config = ConfigDict(defer_build=True)  # built at first use (issue 43)

    type: Literal["webhook"]
    name: str = Field(default="webhook", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """The sink's name in the drop metric and the log (unique among the sinks)."""
    url: AnyHttpUrl
    """Where batches are POSTed: ``https://``, or ``http://`` on loopback; no credentials in it."""
    token_env: str | None = Field(default=None, pattern=ENV_NAME)
    """Environment variable holding a bearer token sent as ``Authorization: Bearer ...``."""
    batch_size: int = Field(default=100, ge=1, le=10_000)
    """Most lines in one batch; a full batch is sent at once."""
    batch_seconds: float = Field(default=1.0, gt=0, le=3600)
    """Longest a line waits for its batch to fill, in seconds."""
    timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    """Longest one POST may take, in seconds (then it counts as failed and is retried)."""

    @field_validator("url")
    @classmethod
    def _safe_url(cls, url: AnyHttpUrl) -> AnyHttpUrl:
        from mcp_providers.http import is_loopback_host  # here: importing the config must not import httpx2

        if url.username or url.password:
            raise ValueError(
                "the sink's URL carries credentials; put the token in an environment variable named by token_env"
            )
        if url.scheme != "https" and not is_loopback_host(url.host or ""):
            raise ValueError(
                f"audit lines go over https:// only (http:// is allowed on loopback alone); use https://{url.host}/..."
            )
        return url


class OtlpLogsSinkSettings(WebhookSinkSettings):
    """An OpenTelemetry logs pipeline: batches POSTed to an OTLP/HTTP logs endpoint as JSON
    (``ExportLogsServiceRequest``, OTLP specification 1.x, "OTLP/HTTP"), one log record per line
    (its body the line's JSON, its severity from the decision). Retried with back-off on the
    answers OTLP calls retryable (429, 502, 503, 504) and on network errors; any other non-2xx
    answer drops the batch (counted)."""

    model_config = ConfigDict(defer_build=True)  # built at first use (issue 43)

    type: Literal["otlp"]  # type: ignore[assignment]
    name: str = Field(default="otlp", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    url: AnyHttpUrl
    """The logs endpoint, e.g. ``https://collector.example:4318/v1/logs`` (``http://`` on loopback)."""
    service_name: str = Field(default="mcp-providers", min_length=1, max_length=200)
    """The ``service.name`` resource attribute of every record."""


AuditSink = Annotated[
    FileSinkSettings | SyslogSinkSettings | WebhookSinkSettings | OtlpLogsSinkSettings, Field(discriminator="type")
]


class AuditSettings(BaseModel):
    """The ``[server.audit]`` table: where the audit lines go, one ``[[server.audit.sinks]]`` each.

    ::

        [server.audit]
        drop_log_seconds = 30
        [[server.audit.sinks]]
        type = "syslog"
        transport = "tcp"
        host = "logs.internal"
        port = 6514
        [[server.audit.sinks]]
        type = "webhook"
        url = "https://siem.example/audit"
        token_env = "AUDIT_WEBHOOK_TOKEN"

    Syslog and webhook sinks are fed from a bounded in-memory queue each and drained in the
    background: one that is slow or down never blocks or fails a request; what it drops is counted.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use (issue 43)

    sinks: list[AuditSink] = Field(min_length=1)
    """The sinks; every line goes to each."""
    drop_log_seconds: float = Field(default=30.0, gt=0, le=86_400)
    """A sink that drops lines logs a warning at most once per this many seconds, with the count."""

    @model_validator(mode="after")
    def _names_unique(self) -> "AuditSettings":
        names = [sink.name for sink in self.sinks]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f'two sinks are named {twice[0]!r}; give each its own name, e.g. name = "{twice[0]}2"')
        return self
