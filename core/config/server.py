"""The ``[server]`` table and the tables it nests besides auth and audit: limits, credentials, admin
and tasks."""

import ipaddress
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcp_providers.config.audit import AuditSettings, FileSinkSettings, SyslogSinkSettings, WebhookSinkSettings
from mcp_providers.config.auth import AuthConfig
from mcp_providers.config.environment import ENV_NAME
from mcp_providers.models import Icon

__all__ = [
    "CREDENTIALS_KEY_ENV",
    "AdminSettings",
    "CredentialsSettings",
    "LimitsSettings",
    "ServerSettings",
    "TasksSettings",
]


class LimitsSettings(BaseModel):
    """The ``[server.limits]`` table: request rates per subject (keyed by ``Principal.key``, the
    issuer and subject, never a client address), counted over a moving window of ``window_seconds``.

    Each authenticated subject has one budget per method class; every anonymous caller shares the
    one ``anonymous`` budget, for all methods together. Counted in memory, or in Redis under the
    cluster ``key_prefix`` with ``[cluster]``, so replicas share one count. A refused request gets
    JSON-RPC error -32009 with ``data.retryAfter`` (seconds), and over HTTP a ``Retry-After`` header.
    Without the table nothing is rate-limited (``sessions``, ``listen_streams`` and
    ``provider_threads`` hold at their defaults even so).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    window_seconds: int = Field(default=60, ge=1, le=86_400, strict=True)
    """Length of the moving window, in whole seconds (1 to 86400)."""
    reads: int = Field(default=600, ge=1, le=10_000_000, strict=True)
    """``resources/read``, ``prompts/get``, ``completion/complete``, ``tasks/get`` and ``tasks/update``
    requests per subject per window."""
    calls: int = Field(default=120, ge=1, le=10_000_000, strict=True)
    """``tools/call`` and extension method requests per subject per window."""
    lists: int = Field(default=600, ge=1, le=10_000_000, strict=True)
    """``*/list``, ``resources/subscribe`` and ``subscriptions/listen`` requests per subject per window."""
    anonymous: int = Field(default=60, ge=1, le=10_000_000, strict=True)
    """Requests per window of any method, shared by every anonymous caller together; at most the
    smallest of ``reads``, ``calls`` and ``lists`` (it is the stricter bucket)."""
    sessions: int = Field(default=100, ge=1, le=10_000, strict=True)
    """2025-era HTTP sessions one subject may hold open at once (anonymous callers share one such
    count). An authenticated subject is held to the default even without the table
    (``transport/sessions.py``)."""
    listen_streams: int = Field(default=32, ge=1, le=100_000, strict=True)
    """2026-07-28 ``subscriptions/listen`` streams one subject may hold open at once (anonymous
    callers share one such count). An authenticated subject is held to the default even without
    the table (``methods/subscriptions.py``)."""
    sessions_opened: int = Field(default=30, ge=1, le=10_000_000, strict=True)
    """2025-era HTTP sessions one subject may open (``initialize``) per window; anonymous callers
    share one such count."""
    provider_threads: int = Field(default=40, ge=1, le=10_000, strict=True)
    """Threads running plugins' plain (non-``async``) functions at once, for every caller together
    (1 to 10000; 40, anyio's default, also without the table). A thread counts until its function
    returns, even after its request was answered at the deadline; a request finding them all busy
    waits within its own deadline, then gets -32005 naming the plugin and function that hold them
    (:mod:`mcp_providers._threads`). The server's own threads (reload) are not counted."""

    @model_validator(mode="after")
    def _anonymous_is_stricter(self) -> "LimitsSettings":
        smallest = min(("reads", self.reads), ("calls", self.calls), ("lists", self.lists), key=lambda p: p[1])
        if self.anonymous > smallest[1]:
            raise ValueError(
                f"anonymous ({self.anonymous}) is more than {smallest[0]} ({smallest[1]}); the bucket every "
                f"anonymous caller shares must be the stricter one: set anonymous to {smallest[1]} or less"
            )
        return self


CREDENTIALS_KEY_ENV = "MCP_PROVIDERS_CREDENTIALS_KEY"
"""The default environment variable holding the deployment key of the shared credential cache."""


class CredentialsSettings(BaseModel):
    """The ``[server.credentials]`` table: the broker of upstream credentials providers obtain on a
    caller's behalf (:mod:`mcp_providers.credentials`).

    Without ``[cluster]`` they are cached in the process and nothing here is required. With
    ``[cluster]`` they are cached in Redis, encrypted (AES-256-GCM) with the key in the environment
    variable ``key_env``: with this table present that key must be set and valid or ``serve``
    refuses to start; without the table a valid key in ``$MCP_PROVIDERS_CREDENTIALS_KEY`` is used,
    and with none a provider asking for a credential gets an error (never a plaintext cache).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    margin_seconds: float = Field(default=60.0, ge=0, le=86_400)
    """A cached credential is handed out until this many seconds before it expires."""
    key_env: str = Field(default=CREDENTIALS_KEY_ENV, pattern=ENV_NAME)
    """Environment variable holding the deployment key under ``[cluster]``: 32 random bytes in
    base64, the same on every replica (``docs/security.md`` says how to make one)."""
    lock_seconds: float = Field(default=30.0, gt=0, le=600)
    """Under ``[cluster]``: longest one replica's obtain holds the others back (its lease's TTL),
    should it die while obtaining."""


class AdminSettings(BaseModel):
    """``[server.admin]``: who may reload the configuration over HTTP (``POST /admin/reload``
    beside ``/readyz``, never on the MCP path; ``mcp-providers reload --url``). Without this table
    that route answers 404; ``SIGHUP`` reloads whatever is configured here."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use (issue 43)

    token_env: str | None = Field(default=None, pattern=ENV_NAME)
    """Environment variable holding a bearer token that may reload (at least 32 characters)."""
    subjects: tuple[str, ...] = ()
    """Subjects of principals that may reload, with a bearer token ``[server.auth]`` accepts (its
    issuers, audience and scopes apply as on the MCP path)."""
    issuers: tuple[str, ...] = ()
    """The issuers whose ``subjects`` may reload (default: any ``[server.auth]`` trusts); required
    when it trusts more than one, since a subject is unique only within its issuer."""
    metrics: bool = False
    """Put ``/metrics`` behind this gate too, as ``/status`` is (a Prometheus scrape then sends the
    token: ``authorization: {credentials_file: ...}``). Off by default: ``/metrics`` answers anyone
    who reaches the port, and it names every served method and tool (no content, no caller), tools
    a caller's ``tools/list`` may not show; keep that port private (``deploy/``'s proxy and chart
    do), or turn this on."""

    @model_validator(mode="after")
    def _someone(self) -> "AdminSettings":
        if self.token_env is None and not self.subjects:
            raise ValueError(
                "[server.admin] names no one who may reload: set token_env (a variable holding a token) "
                'or subjects (e.g. subjects = ["ops-admin"], principals [server.auth] accepts)'
            )
        return self


class TasksSettings(BaseModel):
    """``[server.tasks]``: tool calls run as tasks (the ``io.modelcontextprotocol/tasks`` extension,
    SEP-2663) for tools declared ``task_support = "optional"`` or ``"required"``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttl_seconds: float = Field(default=3600.0, ge=1, le=7 * 86_400)
    """Seconds a task is kept: from its start while it runs, from its end once it has a result
    (a client polling later gets "task not found")."""
    poll_interval_ms: int = Field(default=1000, ge=50, le=3_600_000)
    """The ``pollIntervalMs`` suggested to clients."""
    max_running_per_subject: int = Field(default=16, ge=1, le=10_000)
    """Tasks one caller (issuer and subject) may have running on one replica; the next call is
    refused with -32009 until one ends."""
    max_ended_bytes_per_subject: int = Field(default=32 * 2**20, ge=1024, le=2**40)
    """Bytes (the record's JSON: result or error included) one caller's ended tasks may hold in the
    process's memory until their ``ttl_seconds`` is up; past it, that caller's oldest ended tasks are
    dropped (counted in ``mcp_providers_tasks_evicted``; ``tasks/get`` then says so to their owner).
    A result bigger than this alone is dropped as it ends. Without ``[cluster]`` only: Redis
    expires tasks by ``ttl_seconds`` and is bounded by its own ``maxmemory``."""
    max_ended_bytes: int = Field(default=256 * 2**20, ge=1024, le=2**42)
    """Bytes every caller's ended tasks together may hold in the process's memory; past it, the oldest
    ended tasks of anyone are dropped first. At least ``max_ended_bytes_per_subject``."""

    @model_validator(mode="after")
    def _per_subject_within_total(self) -> "TasksSettings":
        if self.max_ended_bytes_per_subject > self.max_ended_bytes:
            raise ValueError(
                f"[server.tasks] max_ended_bytes_per_subject ({self.max_ended_bytes_per_subject}) is more than "
                f"max_ended_bytes ({self.max_ended_bytes}), the cap of every caller together: lower it or raise "
                "max_ended_bytes"
            )
        return self


class ServerSettings(BaseModel):
    """The ``[server]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(default="mcp-providers", min_length=1, max_length=200)
    """Server name reported to clients (``serverInfo.name``): no space at either end, no control character."""
    log_level: Literal["debug", "info", "warning", "error"] | None = None
    """The server log's level on stderr (``serve``; ``--log-level`` wins; unset: ``warning``).
    Read at start-up."""
    log_format: Literal["text", "json"] | None = None
    """The server log's lines: ``text`` (UTC timestamp, level, logger, message) or ``json`` (one
    object a line, for a log collector); ``--log-format`` wins; unset: ``text``. Read at start-up."""
    icons: tuple[Icon, ...] = ()
    """The server's icons in ``serverInfo`` (2025-11-25+ sessions), each a table with ``src``
    (``https:`` URL or ``data:image/...;base64,...`` URI) and optional ``mime_type``, ``sizes``
    (``["48x48"]`` or ``["any"]``) and ``theme`` (``"light"``/``"dark"``); a bad one is a config
    error saying what is wrong and the fix, as ``check`` says for a declaration's icon."""
    page_size: int = Field(default=100, ge=1, le=10_000)
    """Items per page of every list result."""
    read_timeout: float = Field(default=30.0, gt=0)
    """Seconds one provider read or tool call may take before it is cut off."""
    max_read_bytes: int = Field(default=4 * 1024 * 1024, ge=1)
    """Largest resource read served, in bytes (a resource's ``max_bytes`` overrides it)."""
    max_result_bytes: int = Field(default=4 * 1024 * 1024, ge=1)
    """Largest tool result served, in bytes of its canonical JSON (blocks and ``structuredContent``);
    a bigger one is refused with an ``isError`` result naming the cap, and the receipt records it."""
    max_connections_per_client: int = Field(default=64, ge=0)
    """Open HTTP connections one client address may hold (``serve --http``); the next is closed at
    once. ``0`` turns the limit off: do that behind a reverse proxy, where every connection comes
    from the proxy's address and the proxy limits its own clients (``deploy/config.toml`` does)."""
    max_embed_bytes: int = Field(default=4096, ge=0)
    """Largest resource a tool result may embed, in bytes; bigger ones become resource links."""
    coalesce_reads: bool = True
    """Let identical concurrent reads (same provider, URI and caller) share one provider read;
    nothing is cached once the read ends (coalescing; see the benchmarks page)."""
    side_effects: dict[str, Literal["enforce", "warn"]] = Field(default_factory=dict)
    """Per plugin (entry-point name): what a side effect attempted while it reads a resource, completes,
    renders a prompt or runs an ``effects="none"`` tool does. ``"enforce"`` (every plugin not named)
    refuses it with -32008; ``"warn"`` lets it happen, logs a warning and records it in the receipt's
    ``violations``: a switch for migrating a plugin, not for serving."""
    embedded_side_effects: Literal["scoped", "enforce"] = "scoped"
    """What a composition embedded in someone else's process (``mount()``, ``attach()``, a host
    running ``compose()``) installs to enforce the side-effect scope. ``"scoped"``: the audit hook
    only (files, processes), and HTTP judged in :func:`mcp_providers.http.client`; nothing of the
    host is patched. ``"enforce"``: every process-wide guard ``serve`` installs (socket, TLS,
    ``os.open``, ``http.client`` and client-library patches, the import hook, the task factory),
    once and for the rest of the process. ``serve`` always installs them (the CLI owns its process);
    ``docs/embedding.md`` lists what each installs."""
    max_subscriptions_per_session: int = Field(default=100, ge=1, le=100_000)
    """Watches one session (2025-era) or one listen stream (2026-07-28) may hold at once."""
    max_uri_length: int = Field(default=2048, ge=16, le=65_536)
    """Longest URI a request may name, in characters (reads, watches, completion refs, skills): a
    longer one is refused -32602 before it is routed."""
    audit_log: Path | None = None
    """JSON-lines file that gets one line per list, read, call and denial (never content or secrets)."""
    audit_key_env: str | None = Field(default="MCP_PROVIDERS_AUDIT_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable holding the deployment's secret key for ``argumentsHmac`` (HMAC-SHA256 of a
    tool call's canonical JSON arguments, in receipts and the audit log). Unset: a random key per
    process (digests then compare only within one process), with a warning when ``audit_log`` is
    set or this key is written in the file."""
    request_state_ttl: float = Field(default=300.0, gt=0, le=86_400)
    """Seconds the ``requestState`` of a 2026-07-28 tool call that asked for input stays valid: the
    client must answer and retry within it, or start the call over."""
    request_state_key_env: str | None = Field(
        default="MCP_PROVIDERS_REQUEST_STATE_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )
    """Environment variable holding the key (32 bytes or more) sealing those states. Unset: a random
    key per process, so a retry must reach the replica that asked; replicas behind one address
    need the same key."""
    audit: AuditSettings | None = None
    """``[server.audit]``: audit sinks (file, syslog, webhook); ``audit_log`` is short for one file sink."""
    auth: AuthConfig | None = None
    """Bearer-token authentication for streamable HTTP; the token's subject is the caller."""
    tasks: TasksSettings = Field(default_factory=TasksSettings)
    """``[server.tasks]``: how long task results are kept, the suggested poll interval, the per-caller cap."""
    admin: AdminSettings | None = None
    """``[server.admin]``: who may reload the configuration over HTTP; ``None``: no one (SIGHUP still works)."""
    limits: LimitsSettings | None = None
    """``[server.limits]``: request rates per subject; ``None`` (no table) limits nothing."""
    credentials: CredentialsSettings | None = None
    """``[server.credentials]``: the upstream credential broker; ``None`` (no table): its defaults,
    and under ``[cluster]`` the deployment key is optional until a provider asks for a credential."""
    require_plugins: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Entry-point names of plugins ``serve`` refuses to start without: each must be installed,
    selected, loaded and pass its checks. Name every plugin whose ``authorize`` you rely on (e.g.
    ``["policy"]``), so a policy that stops loading is never served around, however it is written."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses or networks (``127.0.0.1``, ``10.0.0.0/8``) whose ``X-Forwarded-For`` and
    ``X-Forwarded-Proto`` are believed (``serve --http``); from anyone else they are ignored."""

    @field_validator("name")
    @classmethod
    def _shown_as_written(cls, name: str) -> str:
        """Clients show the name as it is sent: a space at an end or a control character would show too."""
        if name != name.strip() or any(ord(c) < 32 or ord(c) == 127 for c in name):
            raise ValueError(
                f"[server] name {name!r} has a space at an end or a control character, which clients would show "
                f"in serverInfo: write {' '.join(name.split())!r}"
            )
        return name

    @field_validator("icons")
    @classmethod
    def _good_icons(cls, icons: tuple[Icon, ...]) -> tuple[Icon, ...]:
        faults = [f"icon {i}: {what}; fix: {fix}" for i, icon in enumerate(icons) for what, fix in icon.problems()]
        if faults:
            raise ValueError("; ".join(faults))
        return icons

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_addresses(cls, proxies: tuple[str, ...]) -> tuple[str, ...]:
        for proxy in proxies:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(
                    f"{proxy!r} is not an IP address or network; name the proxy, e.g. 127.0.0.1 or 10.0.0.0/8"
                ) from None
        return proxies

    def audit_sinks(self) -> list[FileSinkSettings | SyslogSinkSettings | WebhookSinkSettings]:
        """Every audit sink: ``audit_log`` (as a file sink named ``audit_log``), then ``[server.audit]``'s."""
        sinks: list[FileSinkSettings | SyslogSinkSettings | WebhookSinkSettings] = []
        if self.audit_log is not None:
            sinks.append(FileSinkSettings(type="file", name="audit_log", path=self.audit_log))
        return sinks + (list(self.audit.sinks) if self.audit is not None else [])

    @field_validator("audit_log")
    @classmethod
    def _audit_log_is_a_file(cls, value: Path | None) -> Path | None:
        if value is not None and value.is_dir():
            raise ValueError(f"{value} is a directory; name a file such as {value / 'audit.jsonl'}")
        return value
