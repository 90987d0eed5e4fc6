"""``/metrics`` stays bounded whatever clients send, and its outcomes are ``ok`` or the JSON-RPC
error code (issue 24 item 7). Served as ``serve --http`` serves it, on loopback."""

from __future__ import annotations

import re

import anyio
import pytest
from mcp import Client
from serve_support import LIVE, URI, initialize, post, request, served

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


def _samples(port: int) -> dict[tuple[str, str], float]:
    status, _, body = request(port, "GET", path="/metrics")
    assert status == 200
    found = {}
    for line in body.decode().splitlines():
        m = re.fullmatch(r'mcp_providers_requests_total\{method="([^"]*)",outcome="([^"]*)"\} (\S+)', line)
        if m and float(m[3]):  # every known series starts at 0 (issue 42): these tests read what was counted
            found[(m[1], m[2])] = float(m[3])
    return found


@pytest.mark.parametrize(("stateless", "json_response"), [(True, True), (False, False)], ids=["stateless", "session"])
def test_made_up_method_names_are_one_label_however_many(stateless: bool, json_response: bool) -> None:
    with served(stateless=stateless, json_response=json_response) as port:
        extra = {} if stateless else {"mcp_session_id": initialize(port)}
        names = [f"x/{i}-{'a' * 300}" for i in range(40)] + ["", "resources/read ", "RESOURCES/READ", "tools/call\n"]
        for i, name in enumerate(names):
            post(port, {"jsonrpc": "2.0", "id": 100 + i, "method": name}, **extra)
        post(port, {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": URI}}, **extra)
        post(port, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, **extra)
        samples = _samples(port)
    methods = {m for m, _ in samples}
    assert methods <= {"other", "resources/read", "ping", "initialize"}, sorted(methods)[:5]
    assert samples[("other", "-32601")] == len(names)
    assert samples[("resources/read", "ok")] == 1 and samples[("ping", "ok")] == 1


def test_a_known_method_that_fails_is_labelled_with_its_code() -> None:
    with served(stateless=True, json_response=True) as port:
        post(port, {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "memo://notes/none"}})
        post(port, {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": 5}})
        samples = _samples(port)
    outcomes = {o for m, o in samples if m == "resources/read"}
    assert outcomes and all(re.fullmatch(r"-?\d+", o) for o in outcomes), outcomes


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_listen_stream_closed_by_its_client_is_ok(mode: str) -> None:
    with served() as port:
        async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode, cache=None) as client:  # type: ignore[arg-type]
            if mode == "auto":
                async with client.listen(resource_subscriptions=[LIVE]):
                    await anyio.sleep(0.2)
            else:
                await client.subscribe_resource(LIVE)
                await client.unsubscribe_resource(LIVE)
            await client.read_resource(URI)
        with anyio.fail_after(5):
            while True:  # the listen request ends after the client has left
                samples = await anyio.to_thread.run_sync(_samples, port)
                if mode == "legacy" or any(m == "subscriptions/listen" for m, _ in samples):
                    break
                await anyio.sleep(0.05)
    assert not [o for _, o in samples if not re.fullmatch(r"ok|-?\d+", o)], samples
    assert all(o == "ok" for _, o in samples), samples
