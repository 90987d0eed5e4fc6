"""Audit sinks (issue 28): every audit line reaches a real ``rsyslog`` (UDP, TCP with octet
counting, a Unix socket) and an HTTP webhook that fails its first calls exactly once; a webhook
that is down neither slows reads nor loses count of what it dropped.

The file sink is the reference: it gets every line, as today's ``audit_log`` does, so "every line
arrives exactly once" is checked as "the shipped lines equal the file's lines, as a multiset".
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from prometheus_client import generate_latest
from pydantic import ValidationError
from real_parts import require_tool

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, ServerSettings, hookimpl
from mcp_providers._serve.transport.ops import Metrics
from mcp_providers.config import AuditSettings, Config
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

URI = "x://a/index"


class Index(ResourceProvider):
    name = "index"
    prefixes = ("x://a/",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=URI, name="index")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="the index")


def _plugin() -> Any:
    return SimpleNamespace(register_resource_providers=hookimpl(lambda: [Index()]))


def _served(tmp_path: Path, *sinks: dict[str, Any], drop_log_seconds: float = 30.0) -> Any:
    """A composition auditing to ``tmp_path/audit.jsonl`` (the reference) and to ``sinks``."""
    reference = {"type": "file", "name": "reference", "path": str(tmp_path / "audit.jsonl")}
    audit = AuditSettings.model_validate({"sinks": [reference, *sinks], "drop_log_seconds": drop_log_seconds})
    return compose({"x": _plugin()}, server=ServerSettings(audit=audit))


def _reference(tmp_path: Path) -> list[str]:
    return (tmp_path / "audit.jsonl").read_text().splitlines()


def _free_port(kind: socket.SocketKind) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_for(check: Any, seconds: float = 10.0) -> None:
    with anyio.fail_after(seconds):
        while not check():
            await anyio.sleep(0.02)


# -- rsyslog --------------------------------------------------------------------------------------

RSYSLOG_CONF = """\
global(workDirectory="{work}" maxMessageSize="64k")
module(load="imudp")
module(load="imtcp")
module(load="imuxsock" SysSock.Use="off")
input(type="imudp" address="127.0.0.1" port="{udp}")
input(type="imtcp" address="127.0.0.1" port="{tcp}")
input(type="imuxsock" Socket="{unix}" UseSpecialParser="off" ParseHostname="on")
template(name="fields" type="string"
         string="%inputname%\\t%protocol-version%\\t%app-name%\\t%msgid%\\t%syslogfacility-text%\\t%syslogseverity-text%\\t%msg%\\n")
action(type="omfile" file="{out}" template="fields" asyncWriting="off")
"""


@pytest.fixture
def rsyslog(tmp_path: Path) -> Iterator[SimpleNamespace]:
    """A real ``rsyslogd`` on free loopback ports (UDP, TCP) and a Unix socket, writing every
    message it parses to ``out`` (one tab-separated line of its parsed RFC 5424 fields each);
    ``start()`` starts it again (same ports, same socket, same file) after ``stop()``."""
    binary = require_tool("rsyslogd", "apt-get install -y rsyslog", also=("/usr/sbin",))
    home = tmp_path / "rsyslog"
    (home / "work").mkdir(parents=True)
    parts = SimpleNamespace(
        udp=_free_port(socket.SOCK_DGRAM), tcp=_free_port(socket.SOCK_STREAM),
        unix=home / "log.sock", out=home / "out.log", process=None,
    )  # fmt: skip
    conf = home / "rsyslog.conf"
    conf.write_text(RSYSLOG_CONF.format(work=home / "work", **vars(parts)))

    def start() -> None:
        with (home / "stderr.txt").open("a") as stderr:
            parts.process = process = subprocess.Popen(
                [binary, "-n", "-f", str(conf), "-i", str(home / "rsyslogd.pid")],
                stdout=subprocess.DEVNULL, stderr=stderr,
            )  # fmt: skip
        deadline = time.monotonic() + 10
        while True:  # the TCP input listens once the inputs are set up; then the socket exists too
            assert process.poll() is None, (home / "stderr.txt").read_text()
            try:
                socket.create_connection(("127.0.0.1", parts.tcp), timeout=0.2).close()
                if parts.unix.exists():
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "rsyslogd did not listen within 10 s"
            time.sleep(0.05)

    def stop() -> None:
        parts.process.terminate()  # SIGTERM: rsyslogd's clean shutdown, as a service restart does
        parts.process.wait(10)

    parts.start, parts.stop = start, stop
    start()
    try:
        yield parts
    finally:
        if parts.process.poll() is None:
            stop()


def _syslog_lines(out: Path) -> list[list[str]]:
    return [line.split("\t", 6) for line in out.read_text().splitlines()] if out.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["udp", "tcp", "unix"])
async def test_every_line_reaches_rsyslog_once(tmp_path: Path, rsyslog: SimpleNamespace, transport: str) -> None:
    unix = transport == "unix"
    where: dict[str, Any] = {"socket": str(rsyslog.unix)} if unix else {"port": getattr(rsyslog, transport)}
    sink = {"type": "syslog", "transport": transport, "facility": "local3", "app_name": "audit-test", **where}
    composition = _served(tmp_path, sink)
    async with Client(composition.server, cache=None) as client:
        for _ in range(25):
            await client.read_resource(URI)
        with pytest.raises(MCPError):
            await client.read_resource("x://a/missing")  # an error line: severity warning
    reference = _reference(tmp_path)
    await _wait_for(lambda: len(_syslog_lines(rsyslog.out)) >= len(reference))
    await anyio.sleep(0.3)  # a duplicate would arrive about now
    received = _syslog_lines(rsyslog.out)
    inputs = {"udp": "imudp", "tcp": "imtcp", "unix": "imuxsock"}
    assert {tuple(r[:5]) for r in received} == {(inputs[transport], "1", "audit-test", "audit", "local3")}
    assert Counter(r[6].strip() for r in received) == Counter(reference)  # each exactly once
    severities = {json.loads(r[6])["decision"]: r[5] for r in received}
    assert severities == {"allowed": "info", "error": "warning"}, severities
    assert composition.runtime.audit.dropped() == {"syslog": 0}


def test_a_syslog_message_is_rfc_5424_whatever_the_host_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_providers._serve.steps.sinks import Outbox, SyslogSink
    from mcp_providers.config import SyslogSinkSettings

    monkeypatch.setattr(socket, "gethostname", lambda: "web {1} é")
    settings = SyslogSinkSettings(type="syslog", transport="tcp", facility="audit", app_name="{app}")
    message = SyslogSink(settings, Outbox("syslog", 1, 1.0)).message(("2026-12-01T08:00:00.000Z", "denied", '{"a":1}'))
    body = b'<109>1 2026-12-01T08:00:00.000Z web{1} {app} %d audit - {"a":1}' % os.getpid()
    assert message == b"%d %s" % (len(body), body)  # facility 13 * 8 + notice 5; octet counted


# -- webhook --------------------------------------------------------------------------------------


class Receiver:
    """A real HTTP server on loopback taking webhook batches: answers 503 to the first ``fail``
    calls and while ``down``; records every call's headers and body."""

    def __init__(self, fail: int = 0, port: int = 0) -> None:
        self.fail, self.down = fail, False
        self.calls: list[tuple[int, dict[str, str], list[str]]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver._lock:
                    status = 503 if receiver.down or receiver.fail > 0 else 200
                    receiver.fail -= 1
                    lines = [json.dumps(x, separators=(",", ":")) for x in json.loads(body)]
                    receiver.calls.append((status, dict(self.headers), lines))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/audit"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def accepted(self) -> list[str]:
        with self._lock:
            return [line for status, _, lines in self.calls if status == 200 for line in lines]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(fail=3)
    yield r
    r.close()


def _webhook(url: str, **more: Any) -> dict[str, Any]:
    return {"type": "webhook", "name": "hook", "url": url, "batch_size": 5, "batch_seconds": 0.05,
            "retry_seconds": 0.02, "max_retry_seconds": 0.1, **more}  # fmt: skip


def _same_json(lines: list[str]) -> Counter[str]:
    return Counter(json.dumps(json.loads(line), separators=(",", ":")) for line in lines)


@pytest.mark.slow
async def test_a_webhook_failing_its_first_three_calls_gets_every_line_once(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUDIT_TEST_TOKEN", "hook-token-7c1e")
    composition = _served(tmp_path, _webhook(receiver.url, token_env="AUDIT_TEST_TOKEN"))
    async with Client(composition.server, cache=None) as client:
        for _ in range(23):
            await client.read_resource(URI)
    reference = _reference(tmp_path)
    assert _same_json(receiver.accepted()) == _same_json(reference)  # each exactly once
    first_key = receiver.calls[0][1]["Idempotency-Key"]
    assert [c[1]["Idempotency-Key"] for c in receiver.calls[:4]] == [first_key] * 4  # one batch, retried
    assert [c[0] for c in receiver.calls[:4]] == [503, 503, 503, 200]
    ok = [c for c in receiver.calls if c[0] == 200]
    assert len({c[1]["Idempotency-Key"] for c in ok}) == len(ok)  # a 2xx batch is never sent again
    assert [int(c[1]["X-Audit-Sequence"]) for c in ok] == list(range(1, len(ok) + 1))
    assert {c[1]["Authorization"] for c in receiver.calls} == {"Bearer hook-token-7c1e"}
    assert all("hook-token-7c1e" not in line for line in reference)
    assert composition.runtime.audit.dropped() == {"hook": 0}


def _metric(composition: Any, sink: str) -> float:
    text = generate_latest(Metrics(composition.runtime, lambda method: True).registry).decode()
    name = f'mcp_providers_audit_dropped_total{{sink="{sink}"}}'
    found = [line for line in text.splitlines() if line.startswith(name + " ")]
    assert len(found) == 1, text
    return float(found[0].rsplit(" ", 1)[1])


@pytest.mark.slow
async def test_a_webhook_that_never_answers_2xx_counts_every_line_dropped_by_the_time_the_server_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines past the queue are dropped as they come; the batch being retried, and what is queued,
    when the server stops (issue 42: retries go on while the queue has room)."""
    from mcp_providers._serve.steps import audit

    monkeypatch.setattr(audit, "FLUSH_SECONDS", 0.3)  # how long a stop waits for the queues
    port = _free_port(socket.SOCK_STREAM)  # nothing listens there
    composition = _served(tmp_path, _webhook(f"http://127.0.0.1:{port}/audit", retries=2, queue_size=2))
    async with Client(composition.server, cache=None) as client:
        for _ in range(7):
            await client.read_resource(URI)
        assert composition.runtime.audit.dropped()["hook"] > 0  # the queue filled: dropped at once
    assert composition.runtime.audit.dropped() == {"hook": len(_reference(tmp_path))}
    assert _metric(composition, "hook") == len(_reference(tmp_path))


@pytest.mark.slow
async def test_a_webhook_down_longer_than_its_retries_last_keeps_every_line_its_queue_holds(tmp_path: Path) -> None:
    """Issue 42 (build 7): retries go on while the queue has room; none of these lines is lost."""
    receiver = Receiver()
    receiver.down = True
    try:
        composition = _served(tmp_path, _webhook(receiver.url, retries=1))  # 2 attempts, then more while room
        async with Client(composition.server, cache=None) as client:
            for _ in range(7):
                await client.read_resource(URI)
            await _wait_for(lambda: len(receiver.calls) >= 6)  # well past its retries
            assert composition.runtime.audit.dropped() == {"hook": 0}
            receiver.down = False
            await _wait_for(lambda: composition.runtime.audit.shipped[0].outbox.idle)
        assert _same_json(receiver.accepted()) == _same_json(_reference(tmp_path))  # every line, once
        assert composition.runtime.audit.dropped() == {"hook": 0}
    finally:
        receiver.close()


OUTAGE_SECONDS = 30.0
"""How long rsyslogd and the webhook receiver stay down (issue 42, must show 3)."""


@pytest.mark.slow
async def test_rsyslogd_restarted_and_the_webhook_receiver_down_every_line_arrives_once_or_is_counted(
    tmp_path: Path, rsyslog: SimpleNamespace
) -> None:
    """Issue 42 (must show 3): rsyslogd stopped (SIGTERM, as a service restart does) and started
    again while the webhook's receiver is gone (its port refuses connections): per sink, every audit
    line arrives once or is counted in ``mcp_providers_audit_dropped_total``.

    The outage lasts the issue's 30 s, past the 15 s after which the webhook sink used to give a
    batch up; a TCP syslog connection rsyslogd had closed used to take the next line with it.
    Retries now run until the queue is full: with a small queue (30 lines, 45 written while down,
    ``retries=1``) both halves show, lines kept past the retries and delivered, lines past the
    queue counted.
    """
    receiver = Receiver()
    port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
    fast = {"retries": 1, "retry_seconds": 0.02, "max_retry_seconds": 0.1, "queue_size": 30}
    syslog = {"type": "syslog", "name": "syslog", "transport": "tcp", "port": rsyslog.tcp, **fast}
    composition = _served(tmp_path, syslog, _webhook(receiver.url, **fast))
    audit = composition.runtime.audit

    hooked: list[str] = []  # what the receiver took before it went away

    def arrived() -> dict[str, list[str]]:
        return {"syslog": [r[6].strip() for r in _syslog_lines(rsyslog.out)], "hook": hooked + receiver.accepted()}

    def accounted() -> bool:
        written, got = len(_reference(tmp_path)), arrived()
        return all(len(got[sink]) + audit.dropped()[sink] >= written for sink in got)

    try:
        async with Client(composition.server, cache=None) as client:
            for _ in range(20):
                await client.read_resource(URI)
            await _wait_for(accounted)
            rsyslog.stop()
            hooked += receiver.accepted()
            receiver.close()
            for _ in range(45):
                await client.read_resource(URI)
            await anyio.sleep(OUTAGE_SECONDS)  # both retry, well past retries=1 (about 0.1 s), queues full
            assert all(0 < n < 45 for n in audit.dropped().values()), audit.dropped()
            rsyslog.start()
            receiver = Receiver(port=port)
            for _ in range(20):
                await client.read_resource(URI)
            with contextlib.suppress(TimeoutError):
                await _wait_for(accounted)
        reference, got, dropped = _reference(tmp_path), arrived(), audit.dropped()
        for sink in ("syslog", "hook"):
            assert len(got[sink]) + dropped[sink] == len(reference), (
                sink,
                len(got[sink]),
                dropped[sink],
                len(reference),
            )
            assert _same_json(got[sink]) <= _same_json(reference), sink  # none twice, none made up
            assert _metric(composition, sink) == dropped[sink]
    finally:
        receiver.close()


async def _read_seconds(client: Client, count: int) -> list[float]:
    took = []
    for _ in range(count):
        started = time.perf_counter()
        await client.read_resource(URI)
        took.append(time.perf_counter() - started)
    return took


@pytest.mark.slow
async def test_a_webhook_down_for_a_while_neither_slows_reads_nor_miscounts_drops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = Receiver()
    receiver.down = True
    try:
        async with Client(compose({"x": _plugin()}).server, cache=None) as plain:
            await _read_seconds(plain, 20)  # warm up
            without = await _read_seconds(plain, 100)
        composition = _served(tmp_path, _webhook(receiver.url, queue_size=10, retries=100), drop_log_seconds=1.0)
        caplog.set_level(logging.WARNING, logger="mcp_providers.audit")
        async with Client(composition.server, cache=None) as client:
            started, down = time.monotonic(), []
            while time.monotonic() - started < 3.0:  # the sink stays down this long
                down += await _read_seconds(client, 20)
            elapsed = time.monotonic() - started
            receiver.down = False
            await _wait_for(lambda: composition.runtime.audit.shipped[0].outbox.idle)
            written, arrived = len(_reference(tmp_path)), len(receiver.accepted())
            dropped = composition.runtime.audit.dropped()["hook"]
            assert dropped > 0 and dropped + arrived == written, (dropped, arrived, written)
            assert _metric(composition, "hook") == dropped
            assert _same_json(receiver.accepted()) <= _same_json(_reference(tmp_path))  # none twice
    finally:
        receiver.close()
    assert statistics.median(down) < 3 * statistics.median(without) + 0.005, (statistics.median(down), without[:5])
    warnings = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert 1 <= len(warnings) <= elapsed / 1.0 + 2, [r.getMessage() for r in warnings]


@pytest.mark.slow
async def test_lines_still_queued_when_the_server_stops_are_counted_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_providers._serve.steps import audit

    monkeypatch.setattr(audit, "FLUSH_SECONDS", 0.3)  # how long a stop waits for the queues
    receiver = Receiver()
    receiver.down = True
    try:
        composition = _served(tmp_path, _webhook(receiver.url, retries=100))
        async with Client(composition.server, cache=None) as client:
            for _ in range(7):
                await client.read_resource(URI)
    finally:
        receiver.close()
    assert receiver.calls and not receiver.accepted()
    assert composition.runtime.audit.dropped() == {"hook": len(_reference(tmp_path))}


@pytest.mark.slow
async def test_a_syslog_server_that_is_not_there_has_every_line_counted_dropped_by_the_time_the_server_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_providers._serve.steps import audit

    monkeypatch.setattr(audit, "FLUSH_SECONDS", 0.3)
    port = _free_port(socket.SOCK_STREAM)  # nothing listens there
    sink = {"type": "syslog", "transport": "tcp", "port": port, "retries": 1, "retry_seconds": 0.01,
            "queue_size": 1}  # fmt: skip
    composition = _served(tmp_path, sink)
    async with Client(composition.server, cache=None) as client:
        for _ in range(5):
            await client.read_resource(URI)
    assert composition.runtime.audit.dropped() == {"syslog": len(_reference(tmp_path))}


@pytest.mark.slow
async def test_a_sink_that_breaks_costs_its_batch_not_the_server(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_providers._serve.steps import audit, sinks

    monkeypatch.setattr(audit, "RESTART_SECONDS", 0.05)
    deliver, broken = sinks.WebhookSink._deliver, [True]

    async def breaks_once(self: Any, *args: Any) -> bool:
        if broken.pop() if broken else False:
            raise RuntimeError("a bug in the sink")
        return await deliver(self, *args)

    monkeypatch.setattr(sinks.WebhookSink, "_deliver", breaks_once)
    receiver.fail = 0
    composition = _served(tmp_path, _webhook(receiver.url, batch_size=4, batch_seconds=0.2))
    async with Client(composition.server, cache=None) as client:
        for _ in range(4):  # with initialize, more than one batch: the first is what the failure costs
            await client.read_resource(URI)
        await _wait_for(lambda: composition.runtime.audit.dropped()["hook"] == 4)
        for _ in range(6):  # the server serves on, and the sink ships again
            await client.read_resource(URI)
    reference = _reference(tmp_path)
    assert _same_json(receiver.accepted()) == _same_json(reference[4:])
    assert composition.runtime.audit.dropped() == {"hook": 4}


@pytest.mark.slow
def test_serve_ships_to_the_webhook_it_is_configured_with(tmp_path: Path, receiver: Receiver) -> None:
    """``mcp-providers serve`` (stdio) with ``[server.audit]`` from its config file."""
    import os

    from reliability_support import RawStdio

    receiver.fail = 1
    config = tmp_path / "mcp-providers.toml"
    config.write_text(
        f'allow = ["ssg_catalog"]\n[server.audit]\n[[server.audit.sinks]]\ntype = "file"\n'
        f'path = "{tmp_path / "audit.jsonl"}"\n[[server.audit.sinks]]\ntype = "webhook"\nurl = "{receiver.url}"\n'
        f"batch_seconds = 0.05\nretry_seconds = 0.05\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    with RawStdio(env, tmp_path / "stderr.txt", "--config", str(config)) as raw:
        raw.initialize("2025-11-25")
        assert "result" in raw.request("resources/read", {"uri": "documcp://ssgs/hugo"})
        assert raw.request("ping")["result"] == {}
    reference = _reference(tmp_path)
    assert [json.loads(line)["operation"] for line in reference] == ["initialize", "resources/read", "ping"]
    assert _same_json(receiver.accepted()) == _same_json(reference)


# -- configuration --------------------------------------------------------------------------------


def test_the_config_file_names_sinks_and_audit_log_stays_a_file_sink(tmp_path: Path) -> None:
    import tomllib

    text = f"""
[server]
audit_log = "{tmp_path / "a.jsonl"}"
[server.audit]
drop_log_seconds = 5
[[server.audit.sinks]]
type = "syslog"
transport = "tcp"
port = 6514
[[server.audit.sinks]]
type = "webhook"
url = "https://siem.example/audit"
token_env = "AUDIT_WEBHOOK_TOKEN"
"""
    server = Config.model_validate(tomllib.loads(text)).server
    assert [(s.type, s.name) for s in server.audit_sinks()] == [
        ("file", "audit_log"), ("syslog", "syslog"), ("webhook", "webhook"),
    ]  # fmt: skip


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/a", "http://127.0.0.2/a", "http://localhost/a", "http://[::1]/a"])
def test_plain_http_webhooks_on_loopback_are_taken(url: str) -> None:
    assert AuditSettings.model_validate({"sinks": [{"type": "webhook", "url": url}]}).sinks[0].type == "webhook"


@pytest.mark.parametrize(
    ("sinks", "says"),
    [
        ([{"type": "syslog", "transport": "unix"}], "needs socket"),
        ([{"type": "syslog"}, {"type": "syslog", "port": 515}], "two sinks are named 'syslog'"),
        ([{"type": "webhook", "url": "http://127.0.0.1:9/", "queue_size": 0}], "queue_size"),
        ([{"type": "kafka"}], "'file', 'syslog', 'webhook'"),
        ([{"type": "webhook", "url": "http://siem.example/audit"}], "https:// only"),
        ([{"type": "webhook", "url": "http://127.siem.example/audit"}], "https:// only"),  # a name, not 127/8
        ([{"type": "webhook", "url": "http://localhost.siem.example/audit"}], "https:// only"),
        ([{"type": "webhook", "url": "https://user:pw@siem.example/audit"}], "token_env"),
        ([], "at least 1"),
    ],
)
def test_bad_sinks_are_refused_saying_what_would_be_right(sinks: list[dict[str, Any]], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        AuditSettings.model_validate({"sinks": sinks})


# -- OTLP logs ------------------------------------------------------------------------------------


class OtlpReceiver:
    """A real HTTP server on loopback taking OTLP/HTTP JSON logs: each body is parsed with the
    OTLP protobuf schema itself (``opentelemetry-proto``), so a malformed request fails the test;
    answers the statuses of ``answers`` in turn, then 200."""

    def __init__(self, answers: list[int]) -> None:
        from google.protobuf import json_format
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

        self.answers = list(answers)
        self.calls: list[tuple[int, Any]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = json_format.Parse(body, ExportLogsServiceRequest())  # raises on a bad shape
                with receiver._lock:
                    status = receiver.answers.pop(0) if receiver.answers else 200
                    receiver.calls.append((status, request))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/logs"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def accepted(self) -> list[Any]:
        with self._lock:
            return [
                record
                for status, request in self.calls
                if status == 200
                for resource in request.resource_logs
                for scope in resource.scope_logs
                for record in scope.log_records
            ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _otlp(url: str, **more: Any) -> dict[str, Any]:
    return {**_webhook(url, **more), "type": "otlp", "name": "otlp"}


async def test_otlp_logs_get_every_line_once_as_records_retrying_what_otlp_calls_retryable(tmp_path: Path) -> None:
    receiver = OtlpReceiver([503, 429])
    try:
        composition = _served(tmp_path, _otlp(receiver.url, service_name="docs-prod"))
        async with Client(composition.server, cache=None) as client:
            for _ in range(12):
                await client.read_resource(URI)
        records = receiver.accepted()
        reference = _reference(tmp_path)
        assert _same_json([r.body.string_value for r in records]) == _same_json(reference)  # each exactly once
        assert {r.severity_text for r in records} == {"INFO"} and {r.severity_number for r in records} == {9}
        assert all(r.time_unix_nano > 0 for r in records)
        first = receiver.calls[0][1].resource_logs[0]
        assert first.resource.attributes[0].key == "service.name"
        assert first.resource.attributes[0].value.string_value == "docs-prod"
        assert [status for status, _ in receiver.calls[:3]] == [503, 429, 200]
        assert composition.runtime.audit.dropped() == {"otlp": 0}
    finally:
        receiver.close()


async def test_an_otlp_answer_that_is_not_retryable_drops_the_batch_at_once(tmp_path: Path) -> None:
    receiver = OtlpReceiver([400])
    try:
        composition = _served(tmp_path, _otlp(receiver.url, batch_size=100, batch_seconds=0.05, retries=5))
        async with Client(composition.server, cache=None) as client:
            await client.read_resource(URI)
            await _wait_for(lambda: composition.runtime.audit.shipped[0].outbox.idle)
            assert [status for status, _ in receiver.calls] == [400]  # not retried
            assert composition.runtime.audit.dropped() == {"otlp": len(_reference(tmp_path))}
    finally:
        receiver.close()
