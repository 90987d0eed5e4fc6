"""The status page (issue 28, must-show 3): ``/status`` and ``/status.json`` of ``serve --http``,
behind ``[server.admin]``, read by a real HTTP client and by headless Chromium (Debian's
``chromium`` and ``chromium-driver``, driven by Selenium), with a plugin rejected at start-up."""

from __future__ import annotations

import contextlib
import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from real_parts import redis_server, require_tool
from reload_support import EXTRA_URI, NOTES_URI, install, site
from serve_support import serve_process
from waiting import wait_until

from mcp_providers._serve.steps.audit import CALLERS, PER_CALLER, RECENT_DENIALS, SHORT, AuditLog
from mcp_providers._serve.steps.health import FAILURES
from mcp_providers._serve.transport.status import RecentRequests, render

pytestmark = pytest.mark.anyio

ADMIN = "status-admin-" + "5e" * 20  # a secret-looking token: must never be on the page
ALICE = "alice-mcp-token-" + "a1" * 16
UPSTREAM_SECRET = "upstream-password-" + "9f" * 12  # in the server's environment, named nowhere

BROKEN = """
from mcp_providers import hookimpl


@hookimpl
def register_resource_providers():
    raise RuntimeError("needs <libfoo> & a licence")
"""

CONFIG = """
allow = ["notes", "extra", "gatekeeper", "broken"]

[plugins.gatekeeper]
deny = ["extra://box/"]

[server.auth]
tokens = [{subject = "alice", token_env = "STATUS_TEST_ALICE_TOKEN"}]
"""
REJECTED = "hook register_resource_providers raised RuntimeError: needs <libfoo> & a licence"
"""The reason discovery gives for the broken plugin (a ``<`` the page must escape)."""
REPLICA = "status-replica-7"
"""The replica's name (``MCP_PROVIDERS_REPLICA``): the page's title and its cluster section say it."""
ADMIN_TABLE = '\n[server.admin]\ntoken_env = "STATUS_TEST_ADMIN_TOKEN"\n'


def _env(root: Path) -> dict[str, str]:
    site(root, ("notes", "extra"), dist="status_site", version="0.3")
    install(root, "status_gate", {"gatekeeper": "reload_plugins:policy"}, "1.1")  # "policy" is the built-in's name
    (root / "status_broken.py").write_text(BROKEN)
    install(root, "broken_dist", {"broken": "status_broken"}, "2.0")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["MCP_PROVIDERS_REPLICA"] = REPLICA
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(STATUS_TEST_ADMIN_TOKEN=ADMIN, STATUS_TEST_ALICE_TOKEN=ALICE, STATUS_TEST_UPSTREAM=UPSTREAM_SECRET)
    return env


@contextlib.contextmanager
def _serving(folder: Path, config_text: str) -> Iterator[str]:
    """``mcp-providers serve --http`` on a free loopback port, with the site of :func:`_env`; yields its base URL."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "mcp-providers.toml"
    config.write_text(config_text)
    with serve_process(_env(folder / "site"), folder / "serve.log", "-c", str(config)) as (base, _):
        yield base


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _serving(tmp_path_factory.mktemp("status"), CONFIG + ADMIN_TABLE) as base:
        yield base


def _get(url: str, token: str | None = ADMIN) -> tuple[int, dict[str, str], str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read().decode()


def _status(base: str) -> dict[str, Any]:
    code, _, body = _get(f"{base}/status.json")
    assert code == 200, body
    answer: dict[str, Any] = json.loads(body)
    return answer


async def _reads_as_alice(base: str) -> None:
    """One allowed read and one the policy denies, as alice over MCP."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http), cache=None) as alice,
    ):
        result = await alice.read_resource(NOTES_URI)
        assert isinstance(result.contents[0], types.TextResourceContents)
        with pytest.raises(MCPError, match="denied by the reload test policy"):
            await alice.read_resource(EXTRA_URI)


def _by_name(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in status["plugins"]}


async def test_status_json_tells_plugins_catalog_reload_cluster_requests_and_denials(served: str) -> None:
    await _reads_as_alice(served)
    status = _status(served)
    plugins = _by_name(status)
    assert plugins["broken"]["status"] == "rejected"
    assert plugins["broken"]["reason"] == REJECTED
    assert (plugins["broken"]["distribution"], plugins["broken"]["version"]) == ("broken_dist", "2.0")
    assert (plugins["notes"]["distribution"], plugins["notes"]["version"], plugins["notes"]["status"]) == (
        "status_site", "0.3", "loaded",
    )  # fmt: skip
    assert plugins["notes"]["catalog"] == {"resources": 1, "templates": 0, "tools": 0, "prompts": 0, "skills": 0}
    extra = {"resources": 2, "templates": 0, "tools": 1, "prompts": 0, "skills": 0}  # one and live
    assert plugins["extra"]["catalog"] == extra
    _, _, ready = _get(f"{served}/readyz", None)
    assert status["config_digest"] == json.loads(ready)["config_digest"] and len(status["config_digest"]) == 16
    assert status["cluster"] == {"backend": "in-process", "configured": False, "connected": None, "replica": REPLICA,
                                 "cluster_id": None, "leases": []}  # fmt: skip
    reads = status["requests"]["totals"]["resources/read"]
    assert reads["requests"] >= 2 and reads["errors"] >= 1  # other tests of this module read too
    latency = reads["latency_ms"]
    assert 0 < latency["mean"] <= latency["max"] and 0 < latency["p95"] <= latency["max"]
    assert len(status["requests"]["minutes"]) == status["requests"]["window_minutes"]  # quiet minutes too
    assert status["provider_threads"] == {"busy": 0, "past_deadline": 0, "limit": 40}  # every read has returned
    notes = next(u for u in status["upstreams"] if u["plugin"] == "notes")
    assert notes["state"] == "answering" and notes["calls"] >= 1 and notes["last_ok"].endswith("Z")
    denial = next(d for d in status["recent_denials"] if d["operation"] == "resources/read")
    assert denial["target"] == EXTRA_URI and denial["subject"] == "alice" and denial["action"] == "read"
    assert denial["reason"] == "denied by the reload test policy" and denial["time"].endswith("Z")

    code, _, body = _post(f"{served}/admin/reload")
    assert code == 200, body
    after = _status(served)
    assert after["last_reload"]["trigger"] == "admin" and after["last_reload"]["outcome"] == "unchanged"
    assert after["generation"] == status["generation"] == 1


def _post(url: str) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, method="POST", headers={"Authorization": f"Bearer {ADMIN}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.status, dict(answer.headers), answer.read().decode()


@pytest.mark.parametrize("path", ["/status", "/status.json"])
def test_status_needs_a_token_the_admin_table_names(served: str, path: str) -> None:
    code, headers, body = _get(served + path, None)
    assert code == 401 and headers["www-authenticate"] == "Bearer" and "Bearer <admin token>" in body
    code, _, body = _get(served + path, "x" * 40)
    assert code == 403 and "[server.admin] names it nowhere" in body
    code, _, body = _get(served + path, ALICE)  # good on the MCP path, not for the status page
    assert code == 403
    refused = [d for d in _status(served)["recent_denials"] if d["operation"] == "admin/status" and d["target"] == path]
    assert {d["reason"] for d in refused} == {"no bearer token", "token not named by [server.admin]"}
    # tester fourteen: a verified caller refused is named as itself, never "anonymous"
    assert sorted(d["subject"] for d in refused) == ["alice", "anonymous", "anonymous"]


async def test_status_shows_no_secret_and_escapes_what_plugins_say(served: str) -> None:
    await _reads_as_alice(served)
    _get(f"{served}/status", "y" * 40)  # a refused token is not kept either
    code, headers, page = _get(f"{served}/status")
    assert code == 200 and headers["content-type"].startswith("text/html")
    assert headers["cache-control"] == "no-store" and "default-src 'none'" in headers["content-security-policy"]
    _, _, body = _get(f"{served}/status.json")
    for text in (page, body):
        for secret in (ADMIN, ALICE, UPSTREAM_SECRET, "y" * 40):
            assert secret not in text
    assert "needs &lt;libfoo&gt; &amp; a licence" in page and "<libfoo>" not in page
    assert "<script" not in page and "http://" not in page and "https://" not in page  # no script, nothing fetched


@pytest.mark.parametrize("path", ["/status", "/status.json"])
def test_status_is_off_without_the_admin_table(tmp_path: Path, path: str) -> None:
    with _serving(tmp_path, CONFIG) as base:
        for token in (None, ADMIN):
            code, _, body = _get(base + path, token)
            assert code == 404 and "add [server.admin]" in body and "Status page" in body


REDIS_PASSWORD = "redis-password-" + "7c" * 12


def test_status_names_the_cluster_backend_and_this_replica_but_not_its_password(tmp_path: Path) -> None:
    with redis_server(REDIS_PASSWORD) as (url, _):
        cluster = f'\n[cluster]\nredis_url = "{url}"\nkey_prefix = "status-test"\n'
        with _serving(tmp_path, CONFIG + ADMIN_TABLE + cluster) as base:
            # the listener connects in the background: the event, not a deadline (round 4 item 25)
            status = wait_until(lambda: (st := _status(base))["cluster"]["connected"] and st, "the listener connects")
            assert status["cluster"]["backend"] == "redis" and status["cluster"]["configured"] is True
            assert status["cluster"]["replica"] == REPLICA and status["cluster"]["leases"] == []
            assert status["cluster"]["cluster_id"].startswith(f"{REPLICA}:")  # unique per process besides
            _, _, page = _get(f"{base}/status")
            assert "<th>connected</th><td>yes</td>" in page
            for text in (page, json.dumps(status)):
                assert REDIS_PASSWORD not in text


def test_the_status_page_in_headless_chromium_shows_the_rejected_plugin(served: str, tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    chromium = require_tool("chromium", "apt-get install -y chromium")
    driver_path = require_tool("chromedriver", "apt-get install -y chromium-driver")
    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1600", f"--user-data-dir={tmp_path / 'profile'}"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        # A plain navigation sends no Authorization header: DevTools adds it to this page's requests.
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Bearer {ADMIN}"}})
        driver.get(f"{served}/status")
        assert driver.title == f"mcp-providers status: {REPLICA}"
        rows = driver.find_elements(By.CSS_SELECTOR, "tr.rejected")
        cells = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]
        assert [c[:4] for c in cells] == [["broken", "broken_dist", "2.0", "rejected"]]
        assert cells[0][4] == REJECTED
        assert driver.find_elements(By.TAG_NAME, "libfoo") == []  # shown as text, never parsed as markup
        header = driver.find_element(By.TAG_NAME, "th")
        assert header.value_of_css_property("background-color") == "rgba(238, 238, 238, 1)"  # style allowed by hash
        shot = tmp_path / "status.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 0
        print(f"status page screenshot: {shot}")
    finally:
        driver.quit()


# -- the parts, in process ---------------------------------------------------------------------------------


def test_recent_requests_counts_per_minute_within_the_window() -> None:
    now = [600.0 * 60]
    recent = RecentRequests(minutes=3, clock=lambda: now[0])
    recent.count("resources/read", False, 0.004)
    recent.count("resources/read", True, 0.2)
    recent.count("tools/call", False)  # not timed (a listen stream, say)
    now[0] += 60
    recent.count("resources/read", False, 0.03)
    snapshot = recent.snapshot()
    assert snapshot["totals"] == {
        "resources/read": {"requests": 3, "errors": 1, "latency_ms": {"mean": 78.0, "p95": 200.0, "max": 200.0}},
        "tools/call": {"requests": 1, "errors": 0, "latency_ms": None},
    }
    starts = ["1970-01-01T09:59:00Z", "1970-01-01T10:00:00Z", "1970-01-01T10:01:00Z"]
    assert [m["start"] for m in snapshot["minutes"]] == starts  # the quiet minute before is shown too
    assert snapshot["minutes"][0]["methods"] == {}
    now[0] += 120  # the first minute has left the 3-minute window; the two after it were quiet
    later = recent.snapshot()
    assert later["totals"] == {"resources/read": {"requests": 1, "errors": 0,
                                                  "latency_ms": {"mean": 30.0, "p95": 30.0, "max": 30.0}}}  # fmt: skip
    assert [bool(m["methods"]) for m in later["minutes"]] == [True, False, False]
    for _ in range(20):
        recent.count("prompts/get", False, 0.001)
    recent.count("prompts/get", False, 3.0)  # one slow call in 21: the 95th percentile is a fast one
    assert recent.snapshot()["totals"]["prompts/get"]["latency_ms"] == {"mean": 143.8, "p95": 5.0, "max": 3000.0}
    for _ in range(10):
        now[0] += 60
        recent.count("ping", False)
    assert len(recent._buckets) == 3  # bounded however long it runs
    now[0] -= 600  # a clock set back counts into the newest minute, never a new bucket
    recent.count("ping", True)
    newest = recent._buckets[-1][1]["ping"]
    assert len(recent._buckets) == 3 and (newest.requests, newest.errors) == (2, 1)


def test_the_audit_layer_keeps_the_last_denials_without_sinks_shortened() -> None:
    audit = AuditLog()
    assert not audit.enabled
    audit.write({"operation": "resources/read", "target": "a://x", "decision": "allowed", "subject": "bob"})
    assert list(audit.recent_denials) == []  # only denials are kept
    for i in range(PER_CALLER + 5):
        audit.write({"operation": "tools/call", "action": "call", "target": f"t://{i}/" + "z" * 500,
                     "decision": "denied", "subject": "bob", "issuer": None, "reason": "no"})  # fmt: skip
    kept = list(audit.recent_denials)
    assert len(kept) == PER_CALLER and kept[0]["target"].startswith("t://5/")  # the oldest five dropped
    assert len(kept[-1]["target"] or "") == SHORT and (kept[-1]["target"] or "").endswith("…")
    assert set(kept[0]) == {"time", "operation", "action", "target", "subject", "issuer", "reason"}


def test_the_page_escapes_every_value() -> None:
    bad = "<img src=x onerror=alert(1)>"
    one = {"requests": 1, "errors": 0}
    catalog = dict.fromkeys(("resources", "templates", "tools", "prompts", "skills"), 0)
    plugin = {**dict.fromkeys(("name", "distribution", "version", "status", "reason"), bad), "selection": "",
              "catalog": catalog}  # fmt: skip
    body: dict[str, Any] = {
        "server": {"name": bad, "version": "1"}, "time": "t", "serving": True, "config_digest": bad,
        "generation": 1, "last_reload": None, "failed_providers": {bad: bad}, "plugins": [plugin], "left_out": [bad],
        "cluster": {"backend": bad, "configured": True, "connected": False, "replica": bad, "cluster_id": bad,
                    "leases": [bad]},
        "upstreams": [{"provider": bad, "plugin": bad, "state": bad, "calls": 1, "failures": dict.fromkeys(FAILURES, 0),
                       "last_ok": bad, "last_failure": bad, "last_failure_kind": bad, "failing_since": bad}],
        "provider_threads": dict.fromkeys(("busy", "past_deadline", "limit"), bad),
        "requests": {"window_minutes": 1, "totals": {bad: {**one, "latency_ms": None}},
                     "minutes": [{"start": "1970-01-01T00:00:00Z", "methods": {bad: one}}]},
        "recent_denials": [dict.fromkeys(("time", "operation", "action", "target", "subject", "issuer",
                                          "reason"), bad)],
    }  # fmt: skip
    page = render(body)
    # title and h1 4 (name and replica), digest 1, plugin 5 cells and its row class 1, failed provider 2,
    # left out 1, cluster 4, upstream 8 (provider, plugin, state and its row class, last ok, last failure's
    # time and kind, failing since), provider threads 3, method 1, denial 7
    assert "<img" not in page and page.count("&lt;img src=x onerror=alert(1)&gt;") == 37


def _deny(audit: AuditLog, subject: str, issuer: str | None, target: str, operation: str = "resources/read") -> None:
    audit.write({"operation": operation, "action": "read", "target": target, "decision": "denied",
                 "subject": subject, "issuer": issuer, "reason": "no"})  # fmt: skip


@pytest.mark.parametrize(
    "flood",
    [
        {"subject": "anonymous", "issuer": None, "operation": "admin/status"},  # GET /status.json, no token
        {"subject": "anonymous", "issuer": None, "operation": "admin/reload"},  # POST /admin/reload, a bad token
        {"subject": "anonymous", "issuer": None, "operation": "resources/read"},  # unauthenticated MCP reads
        {"subject": "mallory", "issuer": "https://idp.example", "operation": "resources/read"},  # one noisy caller
        {"subject": "alice", "issuer": "https://other.example", "operation": "resources/read"},  # alice's namesake
    ],
    ids=["status", "reload", "mcp-anonymous", "one-caller", "namesake"],
)
def test_round4_item7_a_flood_from_one_caller_keeps_what_others_were_refused(flood: dict[str, Any]) -> None:
    audit = AuditLog()
    for i in range(3):
        _deny(audit, "alice", "https://idp.example", f"a://secret/{i}")
        _deny(audit, "bob", "https://other.example", f"b://secret/{i}")
    for i in range(RECENT_DENIALS * 4):
        _deny(audit, flood["subject"], flood["issuer"], f"/flood/{i}", flood["operation"])
    kept = list(audit.recent_denials)
    assert [d["target"] for d in kept if not d["target"].startswith("/flood/")] == [
        t for i in range(3) for t in (f"a://secret/{i}", f"b://secret/{i}")
    ]
    flooded = [d for d in kept if d["target"].startswith("/flood/")]
    assert len(flooded) == PER_CALLER and flooded[-1]["target"] == f"/flood/{RECENT_DENIALS * 4 - 1}"
    assert len(kept) == len(audit.recent_denials) == PER_CALLER + 6


def test_round4_item7_the_denials_kept_stay_bounded_and_the_newest_are_shown() -> None:
    audit = AuditLog()
    for caller in range(CALLERS + 20):
        for i in range(PER_CALLER + 2):
            _deny(audit, f"user{caller}", "https://idp.example", f"x://{caller}/{i}")
    held = audit.recent_denials._by_caller
    assert len(held) == CALLERS and sum(len(kept) for kept in held.values()) == CALLERS * PER_CALLER
    assert ("https://idp.example", "user0") not in held  # refused least recently: forgotten first
    kept = list(audit.recent_denials)
    assert len(kept) == RECENT_DENIALS and kept[-1]["target"] == f"x://{CALLERS + 19}/{PER_CALLER + 1}"


def test_the_replica_is_named_by_its_variable_else_the_pod_name_else_the_host() -> None:
    import socket

    from mcp_providers._serve.state.replica import replica_name

    assert replica_name({"MCP_PROVIDERS_REPLICA": "replica2", "HOSTNAME": "mcp-providers-1"}) == "replica2"
    assert replica_name({"MCP_PROVIDERS_REPLICA": " ", "HOSTNAME": "mcp-providers-1"}) == "mcp-providers-1"
    assert replica_name({}) == socket.gethostname()
