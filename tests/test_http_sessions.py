"""Round 4 item 4: one caller cannot fill the server's session table.

The SDK caps the sessions of the whole server (10,000), and ``initialize`` reached no
``[server.limits]`` budget: one subject filled the table and every other 2025-era client got 503.
Now each caller (issuer and subject) holds at most ``sessions`` open sessions and opens at most
``sessions_opened`` per window (``transport/sessions.py``). A real ``serve --http`` on loopback.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from serve_support import JSON_HEADERS, request, serve_process

from mcp_providers._serve.transport.sessions import SWEEP_AT, SessionQuota
from mcp_providers.config import LimitsSettings
from mcp_providers.errors import RATE_LIMITED

pytestmark = pytest.mark.slow

ALICE, BOB, CAROL = ("alice-session-token-" + "a" * 20, "bob-session-token-" + "b" * 20,
                     "carol-session-token-" + "c" * 20)  # fmt: skip
DAVE = "dave-session-token-" + "d" * 20
CONFIG = """
allow = ["ssg_catalog"]
[server.auth]
tokens = [{subject = "alice", token_env = "SESS_ALICE"}, {subject = "bob", token_env = "SESS_BOB"},
          {subject = "carol", token_env = "SESS_CAROL"}, {subject = "dave", token_env = "SESS_DAVE"}]
[server.limits]
sessions = 3
sessions_opened = 6
"""


def _init(version: str = "2025-11-25", request_id: int = 1) -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def _post(port: int, token: str, message: Any, **extra: str) -> tuple[int, dict[str, str], Any]:
    headers = {**JSON_HEADERS, "authorization": f"Bearer {token}", **extra}
    status, got, body = request(port, "POST", json.dumps(message).encode(), headers)
    if b"data: " in body:
        body = body.split(b"data: ", 1)[1].split(b"\r\n", 1)[0]
    return status, got, json.loads(body) if body.strip() else None


def _open(port: int, token: str) -> tuple[int, dict[str, str], Any]:
    return _post(port, token, _init())


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("sessions")
    (folder / "c.toml").write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env.update(SESS_ALICE=ALICE, SESS_BOB=BOB, SESS_CAROL=CAROL, SESS_DAVE=DAVE)
    with serve_process(env, folder / "serve.log", "-c", str(folder / "c.toml")) as (base, _proc):
        yield int(base.rsplit(":", 1)[1])


def test_round4_item4_one_subject_holds_at_most_its_sessions_and_others_still_open_theirs(port: int) -> None:
    opened = []
    for _ in range(3):
        status, headers, _ = _open(port, ALICE)
        assert status == 200
        opened.append(headers["mcp-session-id"])
    status, headers, body = _open(port, ALICE)  # the fourth
    assert status == 429 and headers["retry-after"].isdigit(), (status, body)
    assert body["error"]["code"] == RATE_LIMITED and "3 open sessions" in body["error"]["message"]
    assert body["error"]["data"]["retryAfter"] >= 1
    status, headers, _ = _open(port, BOB)  # another subject is not held to alice's count
    assert status == 200 and headers["mcp-session-id"]
    # ended sessions no longer count: DELETE one, and alice opens another
    ended = request(port, "DELETE", b"", {"authorization": f"Bearer {ALICE}", "mcp-session-id": opened[0],
                                          "mcp-protocol-version": "2025-11-25"})  # fmt: skip
    assert ended[0] == 200, ended
    assert _open(port, ALICE)[0] == 200
    # initialize never travels in a batch (2025-03-26, lifecycle), so no batch opens sessions
    batch = [_init("2025-03-26", i) for i in range(1, 4)]
    status, headers, answer = _post(port, BOB, batch, **{"mcp-protocol-version": "2025-03-26"})
    assert status == 400 and "mcp-session-id" not in headers, (status, answer)
    assert answer["error"]["code"] == -32600 and "must not be part of a JSON-RPC batch" in answer["error"]["message"]
    assert _open(port, BOB)[0] == 200  # nothing of bob's quota was spent by it (his second of three)


def test_round4_item4_initialize_is_rate_limited_per_subject(port: int) -> None:
    """``sessions_opened = 6`` per window: ending sessions does not give back what opening them cost."""
    statuses, refusals = [], []
    for _ in range(8):
        status, headers, body = _open(port, CAROL)
        statuses.append(status)
        if status == 200:
            ended = {"authorization": f"Bearer {CAROL}", "mcp-session-id": headers["mcp-session-id"],
                     "mcp-protocol-version": "2025-11-25"}  # fmt: skip
            assert request(port, "DELETE", b"", ended)[0] == 200
        else:
            refusals.append(body["error"]["message"])
    assert statuses == [200] * 6 + [429] * 2, statuses
    assert all("sessions_opened" in m for m in refusals), refusals


def test_a_post_without_a_session_that_is_no_initialize_opens_none_and_costs_no_quota(port: int) -> None:
    """Found by a tester: each such POST (a ping, say) had the SDK open a session only to refuse
    the request 400 with that session's id, and spent the caller's ``sessions_opened``: 22 pings
    later, its ``initialize`` got 429. Now it is refused before the SDK, as the SDK refuses it."""
    for message in ({"jsonrpc": "2.0", "id": 5, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/x"}):
        for _ in range(8):  # more than sessions_opened = 6
            status, headers, body = _post(port, DAVE, message, **{"mcp-protocol-version": "2025-03-26"})
            assert status == 400 and "mcp-session-id" not in headers, (status, headers)
            assert body == {"jsonrpc": "2.0", "id": None,
                            "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}  # fmt: skip
    status, headers, _ = _open(port, DAVE)
    assert status == 200 and headers["mcp-session-id"]


def _scope(subject: str | None, issuer: str = "https://idp.example") -> dict[str, Any]:
    if subject is None:
        return {"type": "http"}
    access = AccessToken(token="t", subject=subject, claims={"iss": issuer}, client_id="", scopes=[])
    return {"type": "http", "user": AuthenticatedUser(access)}  # as the bearer gate and mount() leave it


async def _noop(message: Any) -> None:
    return None


def test_round4_item4_concurrent_opening_requests_count_before_they_are_answered() -> None:
    quota = SessionQuota(lambda session: True, LimitsSettings(sessions=2))
    alice = _scope("alice")
    with quota.opening(alice, _noop), quota.opening(alice, _noop):  # two initializes in flight, none answered
        assert quota.refusal(alice) is not None
        assert quota.refusal(_scope("alice", "https://other.example")) is None  # a namesake at another issuer
    assert quota.refusal(alice) is None  # neither handed out a session


def test_round4_item4_without_the_limits_table_authenticated_subjects_keep_the_default_cap() -> None:
    held: set[str] = set()
    quota = SessionQuota(held.__contains__, None)
    alice = _scope("alice")
    cap = LimitsSettings().sessions
    for i in range(cap):
        assert quota.refusal(alice) is None
        held.add(f"s{i}")
        quota._record(("https://idp.example", "alice"), f"s{i}")
    assert quota.refusal(alice) is not None
    held.discard("s0")  # the SDK ended one (idle timeout)
    assert quota.refusal(alice) is None
    assert quota.refusal(_scope(None)) is None  # anonymous callers: only under [server.limits]


def test_round4_item4_callers_who_opened_sessions_long_ago_hold_no_memory() -> None:
    now = [0.0]
    quota = SessionQuota(lambda session: False, LimitsSettings(window_seconds=60), clock=lambda: now[0])
    for i in range(SWEEP_AT):
        quota._record(("https://idp.example", f"user{i}"), f"s{i}")
    now[0] += 61  # a window later (every session ended), one more caller opens a session
    quota._record(("https://idp.example", "late"), "s-late")
    assert list(quota._opened) == list(quota._open) == [("https://idp.example", "late")]
